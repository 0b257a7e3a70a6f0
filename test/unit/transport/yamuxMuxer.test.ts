import '../../../src/transport/libp2p/nodePolyfills.ts'
import { YamuxStream } from '@libp2p/yamux/stream'
import type { Address } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../../src/transport/libp2p/libp2pTransport.ts'
import { startRelay, type Relay } from '../../../src/transport/libp2p/relay.ts'
import { yamuxMuxer } from '../../../src/transport/libp2p/yamuxMuxer.ts'

const [keyA, keyB] = [anvilKeys[4], anvilKeys[5]]
const B = privateKeyToAddress(keyB)
const eventually = <T>(check: () => T | Promise<T>, timeout = 10_000) => vi.waitFor(check, { timeout, interval: 10 })

/** Window updates asked for (one per data frame read) and sent, counted around the rule of yamuxMuxer(). */
const updates = { asked: 0, sent: 0 }
let relay: Relay
let a: Libp2pTransport
let b: Libp2pTransport
const received: string[] = []

beforeAll(async () => {
  yamuxMuxer()
  const rule = YamuxStream.prototype.sendWindowUpdate
  YamuxStream.prototype.sendWindowUpdate = function (this: YamuxStream) {
    const fields = this as unknown as { recvWindow: unknown; recvWindowCapacity: unknown }
    // The rule reads fields @libp2p/yamux keeps private: a version that renamed them must fail here.
    expect(typeof fields.recvWindow).toBe('number')
    expect(typeof fields.recvWindowCapacity).toBe('number')
    const before = fields.recvWindowCapacity
    rule.call(this)
    updates.asked++
    if (fields.recvWindowCapacity !== before) updates.sent++
  }
  // Megabytes as fast as yamux takes them: the limits per peer (docs/decisions/0064) lifted.
  const unmetered = Number.POSITIVE_INFINITY
  relay = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'], limits: { peerBytesPerSecond: unmetered, ipBytesPerSecond: unmetered } })
  const inboundLimits = { bytesPerSecond: unmetered, linesPerSecond: unmetered, busyMsPerSecond: unmetered }
  a = createLibp2pTransport({ privateKey: keyA, relays: relay.multiaddrs, inboundLimits })
  b = createLibp2pTransport({ privateKey: keyB, relays: relay.multiaddrs, inboundLimits })
  const seen: Address[] = []
  a.onPeerSeen!((peer) => seen.push(peer))
  await a.start(() => {})
  // A asks for B, as for a channel partner: presence reaches a node only for the peers it wants.
  a.connect!(B)
  await b.start((lines) => received.push(...lines))
  await eventually(() => expect(seen).toContain(B))
  await a.send(B, ['hello'])
  await eventually(() => expect(received).toEqual(['hello']))
})
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()])
  await relay?.stop()
})

describe('yamux window updates (go-yamux rule: once half the window is read)', () => {
  test('200 small messages through the relay: every one arrives, and almost no frame is a window update', async () => {
    received.length = 0
    const before = { ...updates }
    const lines = Array.from({ length: 200 }, (_, i) => JSON.stringify({ type: 'Processed', n: i, pad: 'x'.repeat(500) }))
    for (const line of lines) await a.send(B, [line])
    await eventually(() => expect(received).toEqual(lines))
    const asked = updates.asked - before.asked
    const sent = updates.sent - before.sent
    // Each message is a data frame on the circuit's stream and on both relay connections' streams.
    expect(asked).toBeGreaterThanOrEqual(400)
    // 200 x ~0.6 kB is under half a 256 KiB window on every stream; @libp2p/yamux alone would send `asked`.
    expect(sent).toBeLessThanOrEqual(6)
  })

  test('megabytes through the relay: the window is renewed and nothing stalls', async () => {
    received.length = 0
    const before = updates.sent
    const lines = Array.from({ length: 300 }, (_, i) => `${i} ${'y'.repeat(20_000)}`)
    await Promise.all(lines.map((line) => a.send(B, [line])))
    await eventually(() => expect(received).toHaveLength(lines.length))
    expect([...received].sort()).toEqual([...lines].sort())
    // 6 MB through windows of 256 KiB (or more, as yamux grows them): renewed many times, once per half window at most.
    expect(updates.sent - before).toBeGreaterThanOrEqual(3)
    expect(updates.sent - before).toBeLessThan(300)
  })
})
