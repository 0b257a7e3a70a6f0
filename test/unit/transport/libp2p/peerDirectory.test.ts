// The peer directory without libp2p: PeerIds made from keys, announcements encoded as a peer would publish them.
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { Address, Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { PeerDirectory } from '../../../../src/transport/libp2p/peerDirectory.ts'
import { peerIdOfKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { encodeAnnouncement, maxClockSkewMs } from '../../../../src/transport/libp2p/presence.ts'
import { parseRelay } from '../../../../src/transport/libp2p/relayAddress.ts'

const [me, a, b] = [anvilKeys[4]!, anvilKeys[5]!, anvilKeys[6]!].map((key) => ({
  key,
  address: privateKeyToAccount(key).address,
  publicKey: `0x${privateKeyToAccount(key).publicKey.slice(4)}` as Hex,
  peerId: peerIdOfKey(key),
}))
const relayPeer = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
const relay = parseRelay(`/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayPeer}`)
const NOW = 1_700_000_000_000

function directory() {
  const seen: { peer: Address; publicKey?: Hex }[] = []
  const logs: unknown[] = []
  const d = new PeerDirectory({ me: me!.address, relays: [relay], now: () => NOW, log: (e) => logs.push(e) })
  d.onSeen((peer, publicKey) => seen.push({ peer, publicKey }))
  return { d, seen, logs }
}

const announcement = (peer: typeof a, fields: { session?: string; ts?: number; addrs?: string[] } = {}) =>
  encodeAnnouncement({ v: 1, session: fields.session ?? 's1', ts: fields.ts ?? NOW, addrs: fields.addrs ?? [`${relay.addr}/p2p-circuit/p2p/${peer!.peerId}`] })

describe('the peer directory', () => {
  test("an announcement makes its signer known, with the circuits that end at it and its key; the payload's claims go no further", () => {
    const { d, seen } = directory()
    const elsewhere = `/ip4/10.0.0.1/tcp/1/ws/p2p/${relayPeer}/p2p-circuit/p2p/${b!.peerId}`
    const heard = d.announced(
      a!.peerId,
      announcement(a, { addrs: [`${relay.addr}/p2p-circuit/p2p/${a!.peerId}`, elsewhere, '/ip4/127.0.0.1/tcp/1/ws', 'not a multiaddr'] }),
    )
    expect(heard).toMatchObject({ address: a!.address, publicKey: a!.publicKey, how: 'presence', newSession: true })
    expect(heard!.addrs.map(String)).toEqual([`${relay.addr}/p2p-circuit/p2p/${a!.peerId}`])
    expect(heard!.direct).toEqual([])
    expect(d.peerId(a!.address.toUpperCase())?.equals(a!.peerId)).toBe(true)
    expect(d.size).toBe(1)
    // Known, but reported only when the transport says (after the peer store has the addresses).
    expect(seen).toEqual([])
    d.report(heard!)
    expect(seen).toEqual([{ peer: a!.address, publicKey: a!.publicKey }])
  })

  test('direct addresses of the announcer are kept apart from its circuits (private ones only when allowed); those of others never', () => {
    const addrs = [
      `${relay.addr}/p2p-circuit/p2p/${a!.peerId}`,
      `/ip4/93.184.216.34/tcp/4001/ws/p2p/${a!.peerId}`,
      `/ip4/127.0.0.1/tcp/4001/ws/p2p/${a!.peerId}`,
      `/ip4/93.184.216.35/tcp/4001/ws/p2p/${b!.peerId}`,
    ]
    const strict = directory().d.announced(a!.peerId, announcement(a, { addrs }))!
    expect(strict.addrs.map(String)).toEqual([addrs[0]])
    expect(strict.direct.map(String)).toEqual([addrs[1]])
    const devnet = new PeerDirectory({ me: me!.address, relays: [relay], now: () => NOW, allowPrivateDirect: true })
    expect(devnet.announced(a!.peerId, announcement(a, { addrs }))!.direct.map(String)).toEqual([addrs[1], addrs[2]])
  })

  test('ignored: our own, a relay, a late or replayed copy, a clock too far off, a malformed one', () => {
    const { d } = directory()
    expect(d.announced(me!.peerId, announcement(me))).toBeUndefined()
    expect(d.announced(relayPeer, announcement(a))).toBeUndefined()
    expect(d.announced(a!.peerId, new TextEncoder().encode('{"v":2}'))).toBeUndefined()
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW - maxClockSkewMs - 1 }))).toBeUndefined()
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW + maxClockSkewMs + 1 }))).toBeUndefined()
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW - 10 }))).toBeDefined()
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW - 10 }))).toBeUndefined()
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW - 20 }))).toBeUndefined()
    expect(d.size).toBe(1)
  })

  test('a newer announcement of the same session is not news; a new session is (the peer restarted: we announce ourselves)', () => {
    const { d } = directory()
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW - 20 }))?.newSession).toBe(true)
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW - 10 }))?.newSession).toBe(false)
    expect(d.announced(a!.peerId, announcement(a, { ts: NOW, session: 's2' }))?.newSession).toBe(true)
  })

  test('a peer that connects to us is known at once, to be dialled back through each relay; our own dials and relays are not peers', () => {
    const { d } = directory()
    expect(d.connected(a!.peerId, 'outbound')).toBeUndefined()
    expect(d.connected(relayPeer, 'inbound')).toBeUndefined()
    const heard = d.connected(a!.peerId, 'inbound')
    expect(heard).toMatchObject({ address: a!.address, how: 'connection', newSession: false })
    expect(heard!.addrs.map(String)).toEqual([`${relay.addr}/p2p-circuit/p2p/${a!.peerId}`])
    // A second connection adds no address, and does not undo what an announcement said.
    expect(d.connected(a!.peerId, 'inbound')!.addrs).toEqual([])
    expect(d.announced(a!.peerId, announcement(a))?.newSession).toBe(true)
  })

  test('want: a known peer is to be opened now; an unknown one when it is first reported, once; never ourselves', () => {
    const { d } = directory()
    expect(d.want(me!.address)).toBe(false)
    expect(d.want(b!.address)).toBe(false)
    const heardA = d.announced(a!.peerId, announcement(a))!
    expect(d.want(a!.address)).toBe(true)
    expect(d.report(heardA)).toBe(false)
    const heardB = d.connected(b!.peerId, 'inbound')!
    expect(d.report(heardB)).toBe(true)
    expect(d.report(heardB)).toBe(false)
  })

  test('a listener that throws keeps the others from nothing; clear forgets peers and wants but keeps the listeners', () => {
    const { d, seen } = directory()
    const first: Address[] = []
    d.onSeen(() => {
      throw new Error('a broken listener')
    })
    d.onSeen((peer) => first.push(peer))
    const heard = d.announced(a!.peerId, announcement(a))!
    d.want(b!.address)
    d.report(heard)
    expect(seen).toHaveLength(1)
    expect(first).toEqual([a!.address])
    d.clear()
    expect(d.size).toBe(0)
    expect(d.peerId(a!.address)).toBeUndefined()
    expect(d.report(d.connected(b!.peerId, 'inbound')!)).toBe(false)
    expect(first).toEqual([a!.address, b!.address])
  })
})
