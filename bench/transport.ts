// The libp2p transport alone: two transports and a relay in this process, lines of a payment message's size sent
// one at a time (each waits for the last to arrive), as a page and its peer exchange them: through the relay, and
// over a direct connection (the receiver listens on loopback, `--p2p-listen`).
import '../src/transport/libp2p/nodePolyfills.ts'
import type { Address } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { createLibp2pTransport, type Libp2pTransportParameters } from '../src/transport/libp2p/libp2pTransport.ts'
import { startRelay, type Relay } from '../src/transport/libp2p/relay.ts'
import { fmt, medianOf, repeat, spread } from './measure.ts'

const MESSAGES = 2_000
const WARM_UP = 200
const RUNS = 3
/** About the size of a LockedTransfer line. */
export const LINE = JSON.stringify({ type: 'LockedTransfer', pad: 'x'.repeat(900) })

/** Milliseconds from send to arrival and CPU per line (both nodes and the relay), one line at a time, median run. */
async function oneAtATime(relay: Relay, options: Partial<Libp2pTransportParameters>) {
  const [keyA, keyB] = [anvilKeys[4], anvilKeys[5]]
  const B = privateKeyToAddress(keyB)
  // The transport's own speed: the receiver's limits per peer (docs/decisions/0064) lifted.
  const inboundLimits = { bytesPerSecond: Number.POSITIVE_INFINITY, linesPerSecond: Number.POSITIVE_INFINITY, busyMsPerSecond: Number.POSITIVE_INFINITY }
  const a = createLibp2pTransport({ privateKey: keyA, relays: relay.multiaddrs, inboundLimits, ...options })
  const b = createLibp2pTransport({ privateKey: keyB, relays: relay.multiaddrs, inboundLimits, ...options })
  try {
    let arrived: () => void = () => {}
    const seen = new Promise<void>((resolve) => a.onPeerSeen!((peer: Address) => peer === B && resolve()))
    await a.start(() => {})
    a.connect!(B)
    await b.start(() => arrived())
    await seen
    const send = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const received = new Promise<void>((resolve) => (arrived = resolve))
        await a.send(B, [LINE])
        await received
      }
    }
    await send(WARM_UP)
    const runs = await repeat(RUNS, async () => {
      const cpu = process.cpuUsage()
      const t0 = performance.now()
      await send(MESSAGES)
      const used = process.cpuUsage(cpu)
      return { ms: (performance.now() - t0) / MESSAGES, cpuMs: (used.user + used.system) / 1000 / MESSAGES }
    })
    return { ms: runs.map((r) => r.ms), cpuMs: medianOf(runs.map((r) => r.cpuMs)), direct: a.stats().directPeers, circuits: relay.circuits() }
  } finally {
    await Promise.allSettled([a.stop(), b.stop()])
  }
}

export async function benchTransport(): Promise<Record<string, string>> {
  // The relay's limits per peer and per address lifted too: every node here comes from 127.0.0.1.
  const relay = await startRelay({
    listen: ['/ip4/127.0.0.1/tcp/0/ws'],
    limits: { peerBytesPerSecond: Number.POSITIVE_INFINITY, ipBytesPerSecond: Number.POSITIVE_INFINITY },
  })
  try {
    const relayed = await oneAtATime(relay, {})
    const direct = await oneAtATime(relay, { listen: ['/ip4/127.0.0.1/tcp/0/ws'], allowPrivateDirect: true })
    if (relayed.circuits === 0 || direct.direct !== 1 || direct.circuits !== 0) throw new Error('the two paths were not the ones measured')
    return {
      [`a ${fmt(LINE.length)}-byte line from one node to another through the relay, one at a time: ms from send to arrival (${fmt(MESSAGES)} a run)`]: spread(
        relayed.ms,
      ),
      "CPU per line through the relay, both nodes and the relay together (ms; yamux's window updates once half the window is read, docs/decisions/0038)": fmt(
        relayed.cpuMs,
      ),
      'the same line over a direct connection (the receiver listens on loopback, --p2p-listen): ms from send to arrival': spread(direct.ms),
      'CPU per line over the direct connection, both nodes (ms)': fmt(direct.cpuMs),
    }
  } finally {
    await relay.stop()
  }
}
