// A child process of bench/relayCapacity.ts: hosts many Sluice transports on one relay, as many pages would, so
// that the relay's process can be measured from outside. Told what to do by one JSON argument; says what it did as
// JSON lines on stdout.
//   {"mode":"hold","relay":[...],"peers":N,"partners":K}  starts N transports (each with a reservation, its presence
//                                            record put), each watching K of the others (a first send to each), prints {"held":N,"ms":...}, then {"heard":n} every second (the
//                                            announcements they received in all) until stdin closes.
//   {"mode":"pairs","relay":[...],"pairs":P,"window":W}  starts P sender/receiver pairs; each sender keeps W lines in
//                                            flight to its receiver; prints {"received":n} every second until stdin closes.
import '../src/transport/libp2p/nodePolyfills.ts'
import type { Address, Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { createLibp2pTransport, type Libp2pTransport } from '../src/transport/libp2p/libp2pTransport.ts'

type Task = { mode: 'hold'; relay: string[]; peers: number; partners: number } | { mode: 'pairs'; relay: string[]; pairs: number; window: number; line: string }

const task = JSON.parse(process.argv[2]!) as Task
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)
const transports: Libp2pTransport[] = []
const ended = new Promise<void>((resolve) => {
  process.stdin.on('end', resolve)
  process.stdin.on('close', resolve)
  process.stdin.resume()
})

async function startOne(key: Hex, receive: (lines: string[]) => void = () => {}) {
  // Each node's own schedule of announcements (a record put on start, again every few minutes and on each change).
  const events: string[] = []
  const t = createLibp2pTransport({
    privateKey: key,
    relays: task.relay,
    startTimeoutMs: 60_000,
    // A receiver takes all its sender sends: the relay is measured, not a node's limits per peer (docs/decisions/0064).
    inboundLimits: { bytesPerSecond: Number.POSITIVE_INFINITY, linesPerSecond: Number.POSITIVE_INFINITY, busyMsPerSecond: Number.POSITIVE_INFINITY },
    log: (e) => events.push(e.type + ('error' in e ? ` ${String((e.error as Error)?.message ?? e.error)}` : '')),
  })
  transports.push(t)
  await t.start((lines) => receive(lines))
  if (t.addresses().length === 0) throw new Error(`no reservation within the start timeout (${events.join('; ')})`)
  return t
}

async function hold(peers: number, partners: number) {
  const t0 = performance.now()
  let failed = 0
  const started: { t: Libp2pTransport; address: Address }[] = []
  // A few at a time: a page's node opens its reservation on its own schedule, not all in one tick. (Starting a
  // transport costs this process about half a second of CPU: Noise, identify, gossipsub; the start timeout is
  // lifted so that a busy machine measures the relay rather than failing the clients.)
  for (let i = 0; i < peers; i += 5)
    await Promise.all(
      Array.from({ length: Math.min(5, peers - i) }, async () => {
        const key = generatePrivateKey()
        const t = await startOne(key).catch(() => void failed++)
        if (t) started.push({ t, address: privateKeyToAddress(key) })
      }),
    )
  // Each wants to hear of the next K (peers it pays, say): a first send to a peer it does not know yet fails and asks
  // the relay for its record, which the relay hands over then and on each change. (A `connect` would also open a
  // stream to each through the relay: circuits, which are not presence.)
  for (const [i, { t }] of started.entries())
    for (let k = 1; k <= partners && k < started.length; k++) void t.send(started[(i + k) % started.length]!.address, ['hello']).catch(() => {})
  say({ held: peers - failed, failed, ms: Math.round(performance.now() - t0) })
  const timer = setInterval(() => say({ heard: started.reduce((n, { t }) => n + t.stats().announcementsReceived, 0) }), 1000)
  void ended.then(() => clearInterval(timer))
}

async function pairs(count: number, window: number, line: string) {
  let received = 0
  const pairsOf = await Promise.all(
    Array.from({ length: count }, async () => {
      const [keyA, keyB] = [generatePrivateKey(), generatePrivateKey()]
      const B = privateKeyToAddress(keyB)
      const a = await startOne(keyA)
      const seen = new Promise<void>((resolve) => a.onPeerSeen!((peer: Address) => peer === B && resolve()))
      a.connect!(B)
      const ack = { wake: () => {} }
      await startOne(keyB, (lines) => {
        received += lines.length
        ack.wake()
      })
      await seen
      return { a, B, ack }
    }),
  )
  say({ ready: true })
  let running = true
  void ended.then(() => (running = false))
  const timer = setInterval(() => say({ received }), 1000)
  // Each sender keeps `window` sends outstanding: a send resolves once its line is written to the stream.
  await Promise.all(
    pairsOf.map(async ({ a, B }) => {
      const inFlight = new Set<Promise<void>>()
      while (running) {
        const p = a.send(B, [line]).catch(() => {})
        inFlight.add(p)
        void p.then(() => inFlight.delete(p))
        if (inFlight.size >= window) await Promise.race(inFlight)
      }
    }),
  )
  clearInterval(timer)
}

try {
  if (task.mode === 'hold') await hold(task.peers, task.partners)
  else await pairs(task.pairs, task.window, task.line)
  await ended
} catch (error) {
  say({ error: (error as Error).message })
} finally {
  await Promise.allSettled(transports.map((t) => t.stop()))
  process.exit(0)
}
