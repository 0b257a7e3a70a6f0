// The outbound streams without the transport: two bare libp2p nodes over WebSockets on loopback, no relay, no
// presence; the receiving one reads the message protocol's frames.
import '../../../../src/transport/libp2p/nodePolyfills.ts'
import { identify } from '@libp2p/identify'
import type { PeerId, Stream } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { lpStream } from '@libp2p/utils'
import { webSockets } from '@libp2p/websockets'
import { createLibp2p, type Libp2p } from 'libp2p'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { PeerUnreachableError, TransportClosedError } from '../../../../src/transport/errors.ts'
import { decodeFrame, encodeFrames } from '../../../../src/transport/libp2p/frames.ts'
import { OutboundStreams } from '../../../../src/transport/libp2p/outboundStreams.ts'
import { libp2pPrivateKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { messageProtocol } from '../../../../src/transport/libp2p/protocol.ts'
import { yamuxMuxer } from '../../../../src/transport/libp2p/yamuxMuxer.ts'
import { eventually, sleep } from '../support.ts'

const [keyA, keyB] = [anvilKeys[4]!, anvilKeys[5]!]
const B = privateKeyToAddress(keyB)

const nodes: Libp2p[] = []
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.stop()))
})

async function node(key: Hex, listen: string[] = []): Promise<Libp2p> {
  const made = await createLibp2p({
    privateKey: libp2pPrivateKey(key),
    addresses: { listen },
    transports: [webSockets()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamuxMuxer()],
    services: { identify: identify() },
  })
  nodes.push(made)
  return made
}

/** B, listening on loopback, keeping the lines of every frame and each inbound stream. */
async function receiver(listen = ['/ip4/127.0.0.1/tcp/0/ws']) {
  const b = await node(keyB, listen)
  const lines: string[] = []
  const streams: Stream[] = []
  await b.handle(messageProtocol, async (stream) => {
    streams.push(stream)
    const lp = lpStream(stream)
    try {
      for (;;) lines.push(...decodeFrame((await lp.read()).subarray())!)
    } catch {
      // closed
    }
  })
  return { b, lines, streams }
}

/** A's outbound streams to the peers `known` names (by lowercase address). */
async function sender(known: Map<string, PeerId>) {
  const a = await node(keyA)
  const logs: { type: string; peer?: Address }[] = []
  const streams = new OutboundStreams({
    dial: (peerId, signal) => a.dialProtocol(peerId, messageProtocol, { signal }),
    lookup: (peer) => known.get(peer),
    dialTimeoutMs: 2_000,
    sendTimeoutMs: 2_000,
    log: (e) => logs.push(e),
  })
  return { a, streams, logs }
}

const frames = (...lines: string[]) => encodeFrames(lines)

describe('outbound streams', () => {
  test('batches to a peer go out in order over one stream, opened on the first send', async () => {
    const { b, lines } = await receiver()
    const { a, streams } = await sender(new Map([[B.toLowerCase(), b.peerId]]))
    await a.peerStore.merge(b.peerId, { multiaddrs: b.getMultiaddrs() })
    const sends = Array.from({ length: 50 }, (_, i) => streams.send(B, frames(`${i}a`, `${i}b`)))
    await Promise.all(sends)
    await eventually(() => expect(lines).toHaveLength(100))
    expect(lines).toEqual(Array.from({ length: 50 }, (_, i) => [`${i}a`, `${i}b`]).flat())
    expect(streams.counters).toEqual({ streamsOpened: 1, framesSent: 50 })
  })

  test('warm opens the stream ahead of the first send, which then dials nothing', async () => {
    const { b, lines, streams: inbound } = await receiver()
    const { a, streams } = await sender(new Map([[B.toLowerCase(), b.peerId]]))
    await a.peerStore.merge(b.peerId, { multiaddrs: b.getMultiaddrs() })
    streams.warm(B)
    await eventually(() => expect(inbound).toHaveLength(1))
    expect(streams.counters.framesSent).toBe(0)
    await streams.send(B, frames('x'))
    await eventually(() => expect(lines).toEqual(['x']))
    expect(streams.counters.streamsOpened).toBe(1)
  })

  test('a peer the lookup does not name fails closed at once; an offline one with PeerUnreachableError, logged', async () => {
    const known = new Map<string, PeerId>()
    const { streams, logs, a } = await sender(known)
    await expect(streams.send(B, frames('x'))).rejects.toBeInstanceOf(TransportClosedError)
    const { b } = await receiver()
    const addrs = b.getMultiaddrs()
    await b.stop()
    known.set(B.toLowerCase(), b.peerId)
    await a.peerStore.merge(b.peerId, { multiaddrs: addrs })
    const t0 = performance.now()
    await expect(streams.send(B, frames('x'))).rejects.toBeInstanceOf(PeerUnreachableError)
    expect(performance.now() - t0).toBeLessThan(2_000)
    expect(logs).toContainEqual(expect.objectContaining({ type: 'streamFailed', peer: B }))
  })

  test('a stream the peer dropped is replaced by one fresh dial, and the batch arrives', async () => {
    const { b, lines, streams: inbound } = await receiver()
    const { a, streams } = await sender(new Map([[B.toLowerCase(), b.peerId]]))
    await a.peerStore.merge(b.peerId, { multiaddrs: b.getMultiaddrs() })
    await streams.send(B, frames('one'))
    await eventually(() => expect(lines).toEqual(['one']))
    inbound[0]!.abort(new Error('the peer drops it'))
    await sleep(50)
    await streams.send(B, frames('two'))
    await eventually(() => expect(lines).toEqual(['one', 'two']))
    expect(streams.counters.streamsOpened).toBe(2)
  })

  test('a send waits for the one before it to the same peer; closeAll ends the streams', async () => {
    const { b, lines, streams: inbound } = await receiver()
    const { a, streams } = await sender(new Map([[B.toLowerCase(), b.peerId]]))
    await a.peerStore.merge(b.peerId, { multiaddrs: b.getMultiaddrs() })
    const big = 'y'.repeat(300_000)
    await Promise.all([streams.send(B, frames(big, big, big)), streams.send(B, frames('after'))])
    await eventually(() => expect(lines).toEqual([big, big, big, 'after']))
    streams.closeAll()
    await eventually(() => expect(inbound[0]!.status).not.toBe('open'))
  })

  test('retire: the batches given before go out on the old stream, which then closes; the next opens a new one, in order', async () => {
    const { b, lines, streams: inbound } = await receiver()
    const { a, streams } = await sender(new Map([[B.toLowerCase(), b.peerId]]))
    await a.peerStore.merge(b.peerId, { multiaddrs: b.getMultiaddrs() })
    await streams.send(B, frames('first'))
    const big = 'z'.repeat(300_000)
    const before = streams.send(B, frames(big, big))
    const retired = streams.retire(B)
    expect(streams.has(B)).toBe(false)
    await Promise.all([before, retired, streams.send(B, frames('after'))])
    await eventually(() => expect(lines).toEqual(['first', big, big, 'after']))
    expect(streams.counters.streamsOpened).toBe(2)
    // The old one ended on our side (the receiver reads its end), the new one is open.
    await eventually(() => expect(inbound[0]!.remoteWriteStatus).toBe('closed'))
    expect(inbound[1]!.remoteWriteStatus).toBe('writable')
  })
})
