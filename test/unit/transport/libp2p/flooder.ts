// A peer that floods another with frames at full speed, in a process of its own so that its work is not the test's:
//   node --import tsx flooder.ts '{"key":"0x..","relay":"/ip4/../p2p/..","target":"16Uiu2..","lines":"signed","perFrame":16}'
// `lines`: "signed" (distinct SecretRequests signed by `key`: each costs the target a signature recovery) or "junk"
// (lines that do not decode). Prints `{"ready":true}` once its stream is open, then `{"bytes":N,"frames":N}` every
// half second; runs until killed. Its stream breaking (the target reset it) is printed and it dials again.
// With `{"sink":true,"key":..,"relay":..}`, it is instead a node that reads and drops what it is sent.
import type { Hex } from 'viem'
import { bareNode, frameOf, frameWriter, messageStream, signedLines, sink } from './roguePeer.ts'

type Task = { key: Hex; relay: string; target: string; lines: 'signed' | 'junk'; perFrame: number } | { sink: true; key: Hex; relay: string }

const task = JSON.parse(process.argv[2]!) as Task
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)

if ('sink' in task) {
  // `{"sink":true,...}`: a node that only reads what is sent to it (sink() in roguePeer.ts), for a flood through the relay.
  const node = await sink(task.key, task.relay)
  say({ ready: true, peerId: node.peerId.toString() })
  setInterval(() => say({ received: node.received() }), 500)
  await new Promise(() => {})
  throw new Error('unreachable')
}

// Distinct lines, more than a receiver remembers as verified (4096), so that each costs it a recovery.
const pool = task.lines === 'signed' ? await signedLines(task.key, 5000) : Array.from({ length: 5000 }, (_, i) => `{"junk":${i}}`)
const frames = Array.from({ length: Math.floor(pool.length / task.perFrame) }, (_, i) => frameOf(pool.slice(i * task.perFrame, (i + 1) * task.perFrame)))
const node = await bareNode(task.key)
const sent = { bytes: 0, frames: 0, resets: 0 }
setInterval(() => say(sent), 500).unref()
let ready = false
for (;;) {
  try {
    const write = frameWriter(await messageStream(node, task.relay, task.target))
    if (!ready) say({ ready: true })
    ready = true
    for (let i = 0; ; i = (i + 1) % frames.length) {
      await write(frames[i]!)
      sent.bytes += frames[i]!.byteLength
      sent.frames++
    }
  } catch (error) {
    sent.resets++
    say({ error: String(error) })
    await new Promise((r) => setTimeout(r, 100))
  }
}
