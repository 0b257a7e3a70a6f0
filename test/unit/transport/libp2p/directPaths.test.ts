// Which announced direct addresses a node takes (without libp2p): the rules an announcement cannot get around.
import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { directAddress } from '../../../../src/transport/libp2p/directPaths.ts'
import { peerIdOfKey } from '../../../../src/transport/libp2p/peerIdentity.ts'

const announcer = peerIdOfKey(anvilKeys[4]!)
const other = peerIdOfKey(anvilKeys[5]!)
const take = (raw: string, allowPrivate = false) => directAddress(raw, announcer, allowPrivate)?.toString()

describe('direct addresses an announcement may give', () => {
  test('WebSockets over an IP address or a DNS name, ending in the announcer’s own peer id', () => {
    for (const ok of [
      `/ip4/93.184.216.34/tcp/4001/ws/p2p/${announcer}`,
      `/ip6/2606:4700::1111/tcp/4001/ws/p2p/${announcer}`,
      `/dns4/node.example.com/tcp/443/wss/p2p/${announcer}`,
      `/dns/node.example.com/tcp/443/tls/ws/p2p/${announcer}`,
    ])
      expect(take(ok)).toBe(ok)
  })

  test('refused: another peer id, none, a circuit, another transport, a private or loopback host unless allowed, garbage', () => {
    for (const refused of [
      `/ip4/93.184.216.34/tcp/4001/ws/p2p/${other}`,
      `/ip4/93.184.216.34/tcp/4001/ws/p2p/${other}/p2p/${announcer}`,
      '/ip4/93.184.216.34/tcp/4001/ws',
      `/ip4/93.184.216.34/tcp/4001/ws/p2p/${other}/p2p-circuit/p2p/${announcer}`,
      `/ip4/93.184.216.34/tcp/4001/p2p/${announcer}`,
      `/ip4/93.184.216.34/udp/4001/quic-v1/p2p/${announcer}`,
      `/ip4/93.184.216.34/tcp/4001/ws/http/p2p/${announcer}`,
      'not a multiaddr',
      '',
    ])
      expect(take(refused, true)).toBeUndefined()
    for (const host of [
      '/ip4/127.0.0.1',
      '/ip4/10.1.2.3',
      '/ip4/192.168.1.7',
      '/ip4/169.254.1.1',
      '/ip4/0.0.0.0',
      '/ip6/::1',
      '/ip6/fe80::1',
      '/dns4/localhost',
      '/dns4/a.localhost',
    ]) {
      const address = `${host}/tcp/4001/ws/p2p/${announcer}`
      expect(take(address)).toBeUndefined()
      expect(take(address, true)).toBe(address)
    }
  })

  test('whatever is announced, a taken address ends in the announcer’s peer id and goes through no relay', () => {
    const host = fc.oneof(
      fc.ipV4().map((ip) => `/ip4/${ip}`),
      fc.ipV6().map((ip) => `/ip6/${ip}`),
      fc.domain().map((d) => `/dns4/${d}`),
    )
    const tail = fc.constantFrom('/ws', '/wss', '/tls/ws', '', '/p2p-circuit', `/p2p/${other}/p2p-circuit`, '/http')
    const id = fc.constantFrom(`/p2p/${announcer}`, `/p2p/${other}`, '')
    fc.assert(
      fc.property(host, fc.integer({ min: 0, max: 65535 }), tail, id, fc.boolean(), (h, port, t, p, allowPrivate) => {
        const taken = directAddress(`${h}/tcp/${port}${t}${p}`, announcer, allowPrivate)
        if (!taken) return
        expect(taken.toString().endsWith(`/p2p/${announcer}`)).toBe(true)
        expect(taken.toString()).not.toContain('p2p-circuit')
        expect(['/ws', '/wss', '/tls/ws']).toContain(t)
      }),
    )
  })
})
