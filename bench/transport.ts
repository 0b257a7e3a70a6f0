// The libp2p transport alone: two transports and a relay in this process, lines of a payment message's size sent
// one at a time (each waits for the last to arrive), as a page and its peer exchange them: through the relay, and
// over a direct connection (the receiver listens on loopback, `--p2p-listen`), and over WebRTC (node-datachannel's
// RTCPeerConnection, as a page has the browser's through its bridge).
import '../src/transport/libp2p/nodePolyfills.ts'
import { webRTC } from '@libp2p/webrtc'
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
    // WebRTC is dialled in the background once A sends (up to 10 s later when B's id sorts first). The transport is
    // best effort (delivery resends): a line on the relay's stream as it is retired may be lost, so no wait here is
    // for one line's arrival.
    for (const until = Date.now() + 60_000; options.webRTC && a.stats().directConnections === 0; ) {
      if (Date.now() > until) throw new Error('no WebRTC connection within 60 s')
      await a.send(B, [LINE]).catch(() => {})
      await new Promise((r) => setTimeout(r, 100))
    }
    // And the first lines over it, the same way, before the runs count.
    for (let i = 0; i < 20; i++) {
      await a.send(B, [LINE]).catch(() => {})
      await new Promise((r) => setTimeout(r, 10))
    }
    const runs = await repeat(RUNS, async () => {
      const cpu = process.cpuUsage()
      const t0 = performance.now()
      await send(MESSAGES)
      const used = process.cpuUsage(cpu)
      return { ms: (performance.now() - t0) / MESSAGES, cpuMs: (used.user + used.system) / 1000 / MESSAGES }
    })
    return {
      ms: runs.map((r) => r.ms),
      cpuMs: medianOf(runs.map((r) => r.cpuMs)),
      direct: a.stats().directPeers,
      webrtc: a.stats().directConnections,
      circuits: relay.circuits(),
    }
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
    const rtc = await oneAtATime(relay, { webRTC: webRTC({ rtcConfiguration: { iceServers: [] } }) })
    if (relayed.circuits === 0 || direct.direct !== 1 || direct.circuits !== 0 || rtc.webrtc !== 1)
      throw new Error('the three paths were not the ones measured')
    return {
      [`a ${fmt(LINE.length)}-byte line from one node to another through the relay, one at a time: ms from send to arrival (${fmt(MESSAGES)} a run)`]: spread(
        relayed.ms,
      ),
      "CPU per line through the relay, both nodes and the relay together (ms; yamux's window updates once half the window is read, docs/decisions/0038)": fmt(
        relayed.cpuMs,
      ),
      'the same line over a direct connection (the receiver listens on loopback, --p2p-listen): ms from send to arrival': spread(direct.ms),
      'CPU per line over the direct connection, both nodes (ms)': fmt(direct.cpuMs),
      'the same line over WebRTC (node-datachannel, loopback host candidates): ms from send to arrival': spread(rtc.ms),
      'CPU per line over WebRTC, both nodes (ms; node-datachannel works in threads of its own, not counted)': fmt(rtc.cpuMs),
    }
  } finally {
    await relay.stop()
  }
}
