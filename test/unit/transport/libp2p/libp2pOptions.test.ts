import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { InvalidRelayAddressError } from '../../../../src/transport/errors.ts'
import { deniesDial, libp2pOptions } from '../../../../src/transport/libp2p/libp2pOptions.ts'
import { libp2pPrivateKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { parseRelay } from '../../../../src/transport/libp2p/relayAddress.ts'

const relayId = peerIdFromPrivateKey(await generateKeyPair('Ed25519'))
const local = parseRelay(`/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayId}`)

describe('the libp2p configuration', () => {
  test('dials to our relays and through circuits are let through on private addresses; other private addresses are refused, public ones not', () => {
    const denies = deniesDial([local])
    expect(denies(multiaddr('/ip4/127.0.0.1/tcp/9090/ws'))).toBe(false)
    expect(denies(multiaddr(`/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayId}`))).toBe(false)
    expect(denies(multiaddr(`/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayId}/p2p-circuit`))).toBe(false)
    // What a peer may list in identify: its LAN and loopback addresses, another port of the relay's host.
    expect(denies(multiaddr('/ip4/192.168.1.7/tcp/4001/ws'))).toBe(true)
    expect(denies(multiaddr('/ip4/127.0.0.1/tcp/9091/ws'))).toBe(true)
    expect(denies(multiaddr('/ip4/8.8.8.8/tcp/443/wss'))).toBe(false)
  })

  test('with direct paths, libp2p dials no peer address of its own choosing, public ones neither: only those the direct paths dial now', () => {
    const dialling = new Set([`/ip4/8.8.8.8/tcp/443/wss/p2p/${relayId}`])
    const denies = deniesDial([local], { deniesDial: (ma) => !dialling.has(ma.toString()) })
    expect(denies(multiaddr(`/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayId}`))).toBe(false)
    expect(denies(multiaddr(`/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayId}/p2p-circuit/p2p/${relayId}`))).toBe(false)
    expect(denies(multiaddr(`/ip4/8.8.8.8/tcp/443/wss/p2p/${relayId}`))).toBe(false)
    expect(denies(multiaddr(`/ip4/8.8.4.4/tcp/443/wss/p2p/${relayId}`))).toBe(true)
    expect(denies(multiaddr('/ip4/192.168.1.7/tcp/4001/ws'))).toBe(true)
    // A circuit's relay that is not ours (any host a circuit address names): libp2p would dial it to reach the circuit.
    expect(denies(multiaddr(`/ip4/8.8.4.4/tcp/22/ws/p2p/${relayId}`))).toBe(true)
  })

  test('created stopped; listens for circuits only when it has relays, and on its direct addresses when given', () => {
    const key = libp2pPrivateKey(anvilKeys[4]!)
    expect(libp2pOptions(key, [local])).toMatchObject({ start: false, addresses: { listen: ['/p2p-circuit'] } })
    expect(libp2pOptions(key, []).addresses).toEqual({ listen: [] })
    // And its direct listen addresses after them.
    expect(libp2pOptions(key, [local], { direct: { listen: ['/ip4/0.0.0.0/tcp/4001/ws'], paths: { deniesDial: () => true } } }).addresses).toEqual({
      listen: ['/p2p-circuit', '/ip4/0.0.0.0/tcp/4001/ws'],
    })
  })

  test('a relay address must be a multiaddr that names the relay', () => {
    expect(() => parseRelay('not an address')).toThrow(InvalidRelayAddressError)
    expect(() => parseRelay('/ip4/127.0.0.1/tcp/9090/ws')).toThrow(/has no \/p2p\/<relay peer id>/)
    expect(parseRelay(`/ip4/127.0.0.1/tcp/9090/ws/p2p/${relayId}`).peerId.equals(relayId)).toBe(true)
  })
})
