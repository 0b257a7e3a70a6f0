// WebRTC between two transports (directConnections.ts, docs/decisions/0065), with real parts: a sluice relay, and
// @libp2p/webrtc's Node build, whose RTCPeerConnection is node-datachannel's (a page's comes through its bridge:
// test/engines/webrtc.test.ts). Loopback host candidates only: no STUN server is reachable here, none is needed.
import '../../../../src/transport/libp2p/nodePolyfills.ts'
import { webRTC } from '@libp2p/webrtc'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { createLibp2pTransport, type Libp2pTransport, type Libp2pTransportLogEvent } from '../../../../src/transport/libp2p/libp2pTransport.ts'
import { startRelay, type Relay } from '../../../../src/transport/libp2p/relay.ts'

const [keyA, keyB] = [anvilKeys[7], anvilKeys[8]]
const [A, B] = [privateKeyToAddress(keyA), privateKeyToAddress(keyB)]
const eventually = <T>(check: () => T | Promise<T>, timeout = 15_000) => vi.waitFor(check, { timeout, interval: 20 })

type Node = { transport: Libp2pTransport; lines: string[]; logs: Libp2pTransportLogEvent[]; seen: Address[] }

const running: Libp2pTransport[] = []
const relays: Relay[] = []
afterEach(async () => {
  await Promise.all(running.splice(0).map((t) => t.stop()))
  await Promise.all(relays.splice(0).map((r) => r.stop()))
})

async function relayed(): Promise<Relay> {
  const relay = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })
  relays.push(relay)
  return relay
}

async function started(key: Hex, relay: Relay, withWebRtc = true): Promise<Node> {
  const logs: Libp2pTransportLogEvent[] = []
  const transport = createLibp2pTransport({
    privateKey: key,
    relays: relay.multiaddrs,
    log: (e) => logs.push(e),
    ...(withWebRtc ? { webRTC: webRTC({ rtcConfiguration: { iceServers: [] } }) } : {}),
  })
  const node: Node = { transport, lines: [], logs, seen: [] }
  transport.onPeerSeen!((peer) => node.seen.push(peer))
  await transport.start((lines) => node.lines.push(...lines))
  running.push(transport)
  return node
}

/**
 * A's direct connection to B comes up while A keeps sending to B, as a node does (the dial is made for peers a node
 * sends to). Within one retry: node-datachannel's handshake now and then fails on this loaded machine (both ends'
 * connections close as they connect; libp2p's initiator then waits out its 6 s per address), and the next is made
 * once the 5 s pause after a failure is over.
 */
async function untilDirect(a: Node, b: Node) {
  let n = 0
  await vi.waitFor(
    async () => {
      await a.transport.send(B, [`meanwhile ${n++}`]).catch(() => {})
      expect([a.transport.stats().directConnections, b.transport.stats().directConnections]).toEqual([1, 1])
    },
    { timeout: 20_000, interval: 250 },
  )
}

/** Sends until the line arrives: delivery's part (a send may fail while the peer is not yet known or reachable). */
async function deliver(from: Node, to: Node, address: Address, line: string) {
  await eventually(async () => {
    if (!to.lines.includes(line)) await from.transport.send(address, [line]).catch(() => {})
    expect(to.lines).toContain(line)
  })
}

describe('direct connections over WebRTC', () => {
  test('a node announces its /webrtc address beside its circuit address, and the peers it sends to move to a WebRTC connection, which carries on without the relay', async () => {
    const relay = await relayed()
    const a = await started(keyA, relay)
    const b = await started(keyB, relay)
    for (const node of [a, b]) {
      await eventually(() => expect(node.transport.addresses().some((addr) => addr.endsWith(`/p2p-circuit/webrtc/p2p/${node.transport.peerId}`))).toBe(true))
      expect(node.transport.addresses().some((addr) => addr.endsWith(`/p2p-circuit/p2p/${node.transport.peerId}`))).toBe(true)
    }
    // The first message goes through the relay at once: it does not wait for ICE.
    await deliver(a, b, B, 'first')
    await untilDirect(a, b)
    // One connection (untilDirect saw one at each end), dialled by the sender: B, which only receives, never dials.
    expect(b.logs.filter((e) => e.type === 'directDialing')).toEqual([])
    expect(a.logs.filter((e) => e.type === 'directOpen')).toEqual([expect.objectContaining({ direction: 'outbound' })])
    await a.transport.send(B, ['over webrtc'])
    await eventually(() => expect(b.lines).toContain('over webrtc'))

    // Without the relay the direct connection carries both ways.
    await relay.stop()
    relays.splice(relays.indexOf(relay), 1)
    for (let i = 0; i < 5; i++) {
      await a.transport.send(B, [`a${i}`])
      await b.transport.send(A, [`b${i}`])
    }
    await eventually(() => {
      expect(b.lines).toEqual(expect.arrayContaining(['a0', 'a1', 'a2', 'a3', 'a4']))
      expect(a.lines).toEqual(expect.arrayContaining(['b0', 'b1', 'b2', 'b3', 'b4']))
    })
    expect([a.transport.stats().directConnections, b.transport.stats().directConnections]).toEqual([1, 1])
  }, 60_000)

  test('a peer without WebRTC is reached through the relay, and nobody tries WebRTC with it', async () => {
    const relay = await relayed()
    const a = await started(keyA, relay)
    const b = await started(keyB, relay, false)
    await eventually(() => expect(b.transport.addresses().length).toBeGreaterThan(0))
    expect(b.transport.addresses().some((addr) => addr.includes('/webrtc'))).toBe(false)
    await deliver(a, b, B, 'hello')
    await deliver(b, a, A, 'hello back')
    await new Promise((r) => setTimeout(r, 500))
    expect(a.logs.filter((e) => e.type === 'directDialing')).toEqual([])
    expect(a.transport.stats().directConnections).toBe(0)
  }, 30_000)

  test('when the direct connection dies, messages go through the relay at once, and none is lost', async () => {
    const relay = await relayed()
    const a = await started(keyA, relay)
    let b = await started(keyB, relay)
    await deliver(a, b, B, 'first')
    await untilDirect(a, b)
    // B goes (its WebRTC connection with it) and comes back without WebRTC: A's connection closes, and A is told the
    // way to B changed (delivery resends what waits for B then), and its next messages go through the relay.
    const seenBefore = a.seen.length
    running.splice(running.indexOf(b.transport), 1)
    await b.transport.stop()
    await eventually(() => expect(a.transport.stats().directConnections).toBe(0))
    expect(a.seen.length).toBeGreaterThan(seenBefore)
    b = await started(keyB, relay, false)
    await deliver(a, b, B, 'after')
    expect(a.logs.some((e) => e.type === 'directClosed')).toBe(true)
  }, 60_000)
})
