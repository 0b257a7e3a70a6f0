import '../../../../src/transport/libp2p/nodePolyfills.ts'
import type { Stream } from '@libp2p/interface'
import type { Libp2p } from 'libp2p'
import { multiaddr } from '@multiformats/multiaddr'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { startRelay, type Relay } from '../../../../src/transport/libp2p/relay.ts'
import { secretRequest } from '../messages.ts'
import { honestPeer, meet, quantile, roundTrips, startFlooder, startRelayProcess, type HonestPeer } from './honestPeers.ts'
import { bareNode, frameOf, frameWriter, messageStream, signedLines, varint } from './roguePeer.ts'
import { lineSigner } from '../../../../src/transport/lineSigner.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

/**
 * A node's inbound message streams under attack by a real libp2p peer that speaks the protocol without our logic
 * (roguePeer.ts): each attack is counted where the node says (its transport's and its delivery's stats, which
 * GET /_debug/transport serves), and two honest nodes' messages through the same relay still go through.
 */
const [keyA, keyB, keyF, keyC] = [anvilKeys[4]!, anvilKeys[5]!, anvilKeys[6]!, anvilKeys[7]!]
const F = privateKeyToAddress(keyF)
const eventually = <T>(check: () => T | Promise<T>, timeout = 10_000) => vi.waitFor(check, { timeout, interval: 20 })

let relay: Relay
let a: HonestPeer
let b: HonestPeer
beforeAll(async () => {
  relay = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'] })
  ;[a, b] = await Promise.all([honestPeer(keyA, relay.multiaddrs), honestPeer(keyB, relay.multiaddrs)])
  await meet(a, b)
}, 60_000)
afterAll(async () => {
  await Promise.allSettled([a?.stop(), b?.stop()])
  await relay?.stop()
})

const rogues: Libp2p[] = []
afterEach(async () => {
  await Promise.allSettled(rogues.splice(0).map((r) => r.stop()))
})
async function rogueStream(): Promise<Stream> {
  const rogue = await bareNode(keyF)
  rogues.push(rogue)
  return messageStream(rogue, relay.multiaddrs[0]!, b.transport.peerId)
}

/** Messages still go both ways between the honest pair, each acknowledged. */
async function stillWorks() {
  const times = [...(await roundTrips(a, b, 5)), ...(await roundTrips(b, a, 5))]
  expect(times).toHaveLength(10)
}

/** A stream's end, as its writer sees it: the other side reset or closed it. */
const ended = (stream: Stream) => new Promise<void>((resolve) => (stream.status === 'open' ? stream.addEventListener('close', () => resolve()) : resolve()))

describe('a node under attack by a peer speaking the protocol: it keeps working and counts the attack', () => {
  test('a frame that is not a JSON array of lines: counted, its stream closed; lines that do not decode: counted, dropped', async () => {
    const before = { ...b.transport.stats(), ...b.delivery.stats() }
    const stream = await rogueStream()
    const closed = ended(stream)
    await frameWriter(stream)(new TextEncoder().encode('{"not":"lines"}'))
    await closed
    expect(b.transport.stats().invalidFrames).toBe(before.invalidFrames + 1)

    const lines = [
      'not json',
      '{"type":"Ping"}',
      JSON.stringify({ ...JSON.parse(await lineSigner(jsSecp256k1, keyF)(secretRequest(1n))), signature: `0x${'00'.repeat(65)}` }),
    ]
    await frameWriter(await rogueStream())(frameOf(lines))
    await eventually(() => expect(b.delivery.stats().invalid).toBe(before.invalid + 3))
    expect(b.received.filter((r) => r.sender === F)).toEqual([])
    await stillWorks()
  })

  test('a frame announced longer than 4 MiB is refused before it is read: counted, its stream reset', async () => {
    const before = b.transport.stats()
    const stream = await rogueStream()
    const closed = ended(stream)
    // The length prefix of a 5 MiB frame, then its first 64 KiB: the rest is never sent, so a node that read the
    // frame whole would wait for it and never close the stream.
    stream.send(varint(5 * 1024 * 1024))
    stream.send(new Uint8Array(64 * 1024))
    await closed
    expect(b.transport.stats().oversizedFrames).toBe(before.oversizedFrames + 1)
    expect(b.transport.stats().framesReceived).toBe(before.framesReceived)
    await stillWorks()
  })

  test("a message signed by another than the peer that sends it (another peer's, replayed): dropped, counted, never handed up", async () => {
    const before = b.delivery.stats()
    // A's own line, as a peer that saw it could send it on: a SecretRequest signed by A.
    const [ofA] = await signedLines(keyA, 1, 777n)
    const [ofF] = await signedLines(keyF, 1, 778n)
    await frameWriter(await rogueStream())(frameOf([ofA!, ofF!]))
    // F's own message is taken (and answered); A's, sent by F, is not.
    await eventually(() =>
      expect(b.received.filter((r) => r.sender === F).map((r) => r.message)).toEqual([expect.objectContaining({ message_identifier: 778n })]),
    )
    expect(b.delivery.stats().wrongSigner).toBe(before.wrongSigner + 1)
    expect(b.received.some((r) => 'message_identifier' in r.message && r.message.message_identifier === 777n)).toBe(false)
    expect(b.logs).toContainEqual({ type: 'wrongSigner', from: F, signer: a.address })
    await stillWorks()
  })

  test('a message replayed 50 times: handed up once, the replays counted', async () => {
    const before = b.delivery.stats()
    const [line] = await signedLines(keyF, 1, 999n)
    const write = frameWriter(await rogueStream())
    for (let i = 0; i < 50; i++) await write(frameOf([line!]))
    await eventually(() => expect(b.delivery.stats().duplicates).toBe(before.duplicates + 49))
    expect(b.received.filter((r) => 'message_identifier' in r.message && r.message.message_identifier === 999n)).toHaveLength(1)
    await stillWorks()
  })

  test('a peer over its lines a second is held back, counted, and loses nothing', async () => {
    // A node of its own that takes 40 lines a second from a peer.
    const slow = await honestPeer(keyC, relay.multiaddrs, { inboundLimits: { linesPerSecond: 40 } })
    try {
      const rogue = await bareNode(keyF)
      rogues.push(rogue)
      const lines = await signedLines(keyF, 200, 5000n)
      const write = frameWriter(await messageStream(rogue, relay.multiaddrs[0]!, slow.transport.peerId))
      const t0 = performance.now()
      for (let i = 0; i < lines.length; i += 10) await write(frameOf(lines.slice(i, i + 10)))
      await eventually(() => expect(slow.received.filter((r) => r.sender === F)).toHaveLength(200), 20_000)
      const took = performance.now() - t0
      console.log(`200 lines at 40 a second: all taken in ${took.toFixed(0)} ms, held back ${slow.transport.stats().rateLimited} times`)
      // 40 a second: the first second's 40 at once, the other 160 over four more seconds at least.
      expect(took).toBeGreaterThan(3_500)
      expect(slow.transport.stats().rateLimited).toBeGreaterThan(0)
      expect(slow.delivery.stats()).toMatchObject({ received: 200, duplicates: 0, invalid: 0 })
    } finally {
      await slow.stop()
    }
  }, 30_000)
})

describe('new connections through the relay', () => {
  test("ten peers reaching a node at once through its relay all get through (libp2p counted them as one host, the relay's address: 5 a second, the others hung until their timeout)", async () => {
    const nodes = await Promise.all(Array.from({ length: 10 }, () => bareNode(generatePrivateKey())))
    rogues.push(...nodes)
    const t0 = performance.now()
    const results = await Promise.allSettled(nodes.map((n) => messageStream(n, relay.multiaddrs[0]!, b.transport.peerId)))
    const took = performance.now() - t0
    console.log(
      `ten peers dialling one node through its relay at once: ${results.filter((r) => r.status === 'fulfilled').length} through in ${took.toFixed(0)} ms`,
    )
    expect(results.map((r) => r.status)).toEqual(Array(10).fill('fulfilled'))
    // A dial past libp2p's rate hung for its whole timeout (5 s).
    expect(took).toBeLessThan(4_000)
  })

  test('a peer opening circuits to a node as fast as it can is refused past its rate at the relay, at once; others still reach the node', async () => {
    const limited = await startRelay({ listen: ['/ip4/127.0.0.1/tcp/0/ws'], limits: { maxCircuitRate: 5 } })
    const target = await honestPeer(keyC, limited.multiaddrs)
    try {
      const rogue = await bareNode(keyF)
      rogues.push(rogue)
      const circuit = multiaddr(`${limited.multiaddrs[0]}/p2p-circuit/p2p/${target.transport.peerId}`)
      // New connections each time (force), twenty as fast as they go.
      const t0 = performance.now()
      const tries = []
      for (let i = 0; i < 20; i++)
        tries.push(
          await rogue.dial(circuit, { force: true }).then(
            () => 'through',
            () => 'refused',
          ),
        )
      const took = performance.now() - t0
      expect(tries.filter((t) => t === 'refused').length).toBeGreaterThanOrEqual(10)
      expect(limited.stats().drops.circuitRate).toBe(tries.filter((t) => t === 'refused').length)
      // Refused at once by the relay, not left to time out.
      expect(took).toBeLessThan(10_000)
      const honest = await bareNode(generatePrivateKey())
      rogues.push(honest)
      await messageStream(honest, limited.multiaddrs[0]!, target.transport.peerId)
    } finally {
      await target.stop()
      await limited.stop()
    }
  })
})

describe('a peer flooding a node at full speed, in a process of its own, through a sluice relay', () => {
  test("the honest pair's round trips through the same relay stay close to what they are without it; the flood is held back and counted", async () => {
    const relayProcess = await startRelayProcess()
    const [c, d] = await Promise.all([honestPeer(keyA, relayProcess.multiaddrs), honestPeer(keyB, relayProcess.multiaddrs)])
    try {
      await meet(c, d)
      await roundTrips(c, d, 10)
      const quiet = await roundTrips(c, d, 50)
      const flooder = await startFlooder({ key: keyF, relay: relayProcess.multiaddrs[0]!, target: d.transport.peerId, lines: 'signed', perFrame: 16 })
      try {
        // Signed lines, each a signature recovery for the node flooded (D), as fast as its stream takes them.
        await eventually(() => expect(d.received.filter((r) => r.sender === F).length).toBeGreaterThan(100), 20_000)
        const flooded = await roundTrips(c, d, 50)
        const [p50, p50Flooded, p90Flooded] = [quantile(quiet, 0.5), quantile(flooded, 0.5), quantile(flooded, 0.9)]
        const { bytes, frames } = flooder.sent()
        console.log(
          `round trips C→D→C (a message and its Delivered) through one sluice relay: p50 ${p50.toFixed(1)} ms without a flood, ` +
            `${p50Flooded.toFixed(1)} ms (p90 ${p90Flooded.toFixed(1)}) while a peer floods D (${(bytes / 1024).toFixed(0)} KiB in ${frames} frames written so far); ` +
            `D took ${d.received.filter((r) => r.sender === F).length} of its lines, held it back ${d.transport.stats().rateLimited} times`,
        )
        expect(d.transport.stats().rateLimited).toBeGreaterThan(0)
        // The bound: measured 0.6x to 2.6x on this 2-core machine, idle and busy (decision 0064 gives the
        // figures); 4x of at least 20 ms leaves room for a loaded machine, and fails if the flood came first.
        expect(p50Flooded).toBeLessThan(4 * Math.max(p50, 20))
      } finally {
        await flooder.stop()
      }
    } finally {
      await Promise.allSettled([c.stop(), d.stop()])
      await relayProcess.stop()
    }
  }, 120_000)
})
