// The libp2p transport alone: two transports and a relay in this process, lines of a payment message's size sent
// one at a time (each waits for the last to arrive), as a page and its peer exchange them.
import '../src/transport/libp2p/nodePolyfills.ts'
import type { Address } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { createLibp2pTransport } from '../src/transport/libp2p/libp2pTransport.ts'
import { startRelay } from '../src/transport/libp2p/relay.ts'
import { fmt, medianOf, repeat, spread } from './measure.ts'

const MESSAGES = 2_000
const WARM_UP = 200
const RUNS = 3
/** About the size of a LockedTransfer line. */
const LINE = JSON.stringify({ type: 'LockedTransfer', pad: 'x'.repeat(900) })

export async function benchTransport(): Promise<Record<string, string>> {
  // The transport's own speed: the relay's and the receiver's limits per peer (docs/decisions/0064) lifted.
  const relay = await startRelay({
    listen: ['/ip4/127.0.0.1/tcp/0/ws'],
    limits: { peerBytesPerSecond: Number.POSITIVE_INFINITY, ipBytesPerSecond: Number.POSITIVE_INFINITY },
  })
  const [keyA, keyB] = [anvilKeys[4], anvilKeys[5]]
  const B = privateKeyToAddress(keyB)
  const inboundLimits = { bytesPerSecond: Number.POSITIVE_INFINITY, linesPerSecond: Number.POSITIVE_INFINITY, busyMsPerSecond: Number.POSITIVE_INFINITY }
  const a = createLibp2pTransport({ privateKey: keyA, relays: relay.multiaddrs, inboundLimits })
  const b = createLibp2pTransport({ privateKey: keyB, relays: relay.multiaddrs, inboundLimits })
  try {
    let arrived: () => void = () => {}
    const seen = new Promise<void>((resolve) => a.onPeerSeen!((peer: Address) => peer === B && resolve()))
    await a.start(() => {})
    await b.start(() => arrived())
    await seen
    const oneAtATime = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const received = new Promise<void>((resolve) => (arrived = resolve))
        await a.send(B, [LINE])
        await received
      }
    }
    await oneAtATime(WARM_UP)
    const runs = await repeat(RUNS, async () => {
      const cpu = process.cpuUsage()
      const t0 = performance.now()
      await oneAtATime(MESSAGES)
      const used = process.cpuUsage(cpu)
      return { ms: (performance.now() - t0) / MESSAGES, cpuMs: (used.user + used.system) / 1000 / MESSAGES }
    })
    return {
      [`a ${fmt(LINE.length)}-byte line from one node to another through the relay, one at a time: ms from send to arrival (${fmt(MESSAGES)} a run)`]: spread(
        runs.map((r) => r.ms),
      ),
      "CPU per line, both nodes and the relay together (ms; yamux's window updates once half the window is read, docs/decisions/0038)": fmt(
        medianOf(runs.map((r) => r.cpuMs)),
      ),
    }
  } finally {
    await Promise.allSettled([a.stop(), b.stop()])
    await relay.stop()
  }
}
