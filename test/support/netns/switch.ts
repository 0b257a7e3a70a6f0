// The emulated links of a test network (network.ts), as a process of its own so that the test's event loop adds no
// jitter: a VXLAN switch in the root namespace. Each host's VXLAN device sends every Ethernet frame, in a UDP
// datagram, here; the switch learns which host each MAC address is behind from the frames' source addresses,
// forwards a frame to the host of its destination (floods broadcasts and unknown destinations to every other
// host), and on the way holds it for the link's delay and drops its share of losses. Frames between two hosts
// leave in the order they came (a delay drawn shorter than the one before waits for it, as on a wire, and as
// netem with a rate set does). It drops every frame to and from a host cut off, also those already on their way,
// and every frame between two hosts cut apart (each still reaching the others).
//
// Started by network.ts with its config as argv[2] and an IPC channel: it answers `cut`, `heal`, `cutPair`,
// `healPair` and `stats`, and
// exits on `exit`. When the channel closes without `exit` (the test process died: a crash, a kill, Ctrl-C), it
// tears the whole network down (runs.ts) before exiting: nothing of the run outlives it.
import dgram from 'node:dgram'
import { teardownSlot } from './runs.ts'

export type SwitchConfig = {
  slot: number
  /** The address the switch listens on: the root namespace's end of the underlay. */
  bind: string
  /** Each host's underlay address: where its VXLAN device sends from and listens. */
  hosts: string[]
  /** Delay and loss per frame, or none when netem does it on the hosts' devices. */
  link?: { delayMs: number; jitterMs: number; lossPercent: number }
}

export type SwitchCommand = { id: number } & (
  | { type: 'cut' | 'heal'; host: string }
  | { type: 'cutPair' | 'healPair'; hosts: [string, string] }
  | { type: 'stats' }
  | { type: 'exit' }
)
export type PairStats = { from: string; to: string; frames: number; bytes: number; lost: number; cut: number }
export type SwitchReply = { type: 'listening'; port: number } | { type: 'done'; id: number; stats?: PairStats[] }

const config = JSON.parse(process.argv[2]!) as SwitchConfig
const hosts = new Set(config.hosts)
const link = config.link
/** Inner source MAC (hex) -> the host it was last seen from. */
const hostOfMac = new Map<string, string>()
const cutOff = new Set<string>()
/** Pairs of hosts cut apart (`a|b`, in order), each still reaching the others. */
const cutPairs = new Set<string>()
const pairKey = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`)
const isCut = (from: string, to: string) => cutOff.has(from) || cutOff.has(to) || cutPairs.has(pairKey(from, to))

type Pair = PairStats & { queue: { at: number; frame: Buffer }[]; last: number; timer?: NodeJS.Timeout }
const pairs = new Map<string, Pair>()
const pairOf = (from: string, to: string): Pair => {
  const key = `${from}>${to}`
  const known = pairs.get(key)
  if (known) return known
  const p: Pair = { from, to, frames: 0, bytes: 0, lost: 0, cut: 0, queue: [], last: 0 }
  pairs.set(key, p)
  return p
}

const socket = dgram.createSocket('udp4')
let port = 0
let closed = false

function send(p: Pair, frame: Buffer) {
  if (closed) return
  if (isCut(p.from, p.to)) {
    p.cut++
    return
  }
  p.frames++
  p.bytes += frame.length
  socket.send(frame, port, p.to)
}

function flush(p: Pair) {
  p.timer = undefined
  const now = performance.now()
  let due = 0
  while (due < p.queue.length && p.queue[due]!.at <= now + 0.5) send(p, p.queue[due++]!.frame)
  p.queue.splice(0, due)
  if (p.queue.length > 0) p.timer = setTimeout(() => flush(p), p.queue[0]!.at - now)
}

function forward(from: string, to: string, frame: Buffer) {
  const p = pairOf(from, to)
  if (isCut(from, to)) {
    p.cut++
    return
  }
  if (!link) return send(p, frame)
  if (Math.random() * 100 < link.lossPercent) {
    p.lost++
    return
  }
  const now = performance.now()
  const at = Math.max(now + link.delayMs + (Math.random() * 2 - 1) * link.jitterMs, p.last)
  p.last = at
  p.queue.push({ at, frame })
  if (!p.timer) p.timer = setTimeout(() => flush(p), at - now)
}

socket.on('message', (frame, sender) => {
  const from = sender.address
  // 8 bytes of VXLAN header, then the Ethernet frame: destination MAC, source MAC.
  if (!hosts.has(from) || frame.length < 22) return
  hostOfMac.set(frame.toString('hex', 14, 20), from)
  const to = (frame[8]! & 1) === 0 ? hostOfMac.get(frame.toString('hex', 8, 14)) : undefined
  if (to === from) return
  if (to) forward(from, to, frame)
  else for (const host of hosts) if (host !== from) forward(from, host, frame)
})

let exiting = false
process.on('message', (command: SwitchCommand) => {
  if (command.type === 'cut') cutOff.add(command.host)
  if (command.type === 'heal') cutOff.delete(command.host)
  if (command.type === 'cutPair') cutPairs.add(pairKey(...command.hosts))
  if (command.type === 'healPair') cutPairs.delete(pairKey(...command.hosts))
  if (command.type === 'exit') exiting = true
  const stats =
    command.type === 'stats' ? [...pairs.values()].map(({ from, to, frames, bytes, lost, cut }) => ({ from, to, frames, bytes, lost, cut })) : undefined
  process.send!({ type: 'done', id: command.id, ...(stats ? { stats } : {}) } satisfies SwitchReply)
  if (exiting) process.disconnect()
})

// Ctrl-C reaches the whole process group: the test process decides, and its end (the channel closing) is what
// tears the network down.
process.on('SIGINT', () => {})
process.on('disconnect', () => {
  closed = true
  for (const p of pairs.values()) clearTimeout(p.timer)
  socket.close()
  if (exiting) process.exit(0)
  teardownSlot(config.slot).then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(`switch: tearing down slot ${config.slot} failed: ${(e as Error).message}`)
      process.exit(1)
    },
  )
})

socket.bind(0, config.bind, () => {
  port = socket.address().port
  process.send!({ type: 'listening', port } satisfies SwitchReply)
})
