// A child process of bench/transportHosts.ts, run in a host of a test network (test/support/netns/): one transport,
// told what to do by one JSON argument, saying what it did as JSON lines on stdout.
//   {"mode":"echo","relay":[...],"listen":[...]}   answers each line with the same line to its sender; prints
//                                                  {"ready":true,"address":...} and runs until it is stopped.
//   {"mode":"ping","relay":[...],"target":"0x…","count":N,"warmUp":W,"line":"…"}  sends a line and waits for its
//                                                  echo, W then N times one after the other; prints {"rtts":[...]}.
// With "webrtc":true both have libp2p's WebRTC transport (node-datachannel's RTCPeerConnection, as a page has the
// browser's through its bridge, no ICE servers: the hosts' own addresses), and the ping warms up until the WebRTC
// connection carries its lines.
import '../src/transport/libp2p/nodePolyfills.ts'
import { webRTC } from '@libp2p/webrtc'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { createLibp2pTransport } from '../src/transport/libp2p/libp2pTransport.ts'

type Task =
  | { mode: 'echo'; relay: string[]; listen: string[]; webrtc?: boolean }
  | { mode: 'ping'; relay: string[]; target: Address; count: number; warmUp: number; line: string; webrtc?: boolean }

const task = JSON.parse(process.argv[2]!) as Task
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`)
const key = generatePrivateKey()
const rtc = task.webrtc ? { webRTC: webRTC({ rtcConfiguration: { iceServers: [] } }) } : {}

try {
  if (task.mode === 'echo') {
    const t = createLibp2pTransport({ privateKey: key, relays: task.relay, listen: task.listen, allowPrivateDirect: true, ...rtc })
    await t.start((lines, from) => void t.send(from, lines).catch(() => {}))
    say({ ready: true, address: privateKeyToAddress(key), addresses: t.addresses() })
    await new Promise<void>((resolve) => process.once('SIGTERM', resolve))
    await t.stop()
  } else {
    let echoed: () => void = () => {}
    const t = createLibp2pTransport({ privateKey: key, relays: task.relay, allowPrivateDirect: true, ...rtc })
    const seen = new Promise<void>((resolve) => t.onPeerSeen!((peer) => peer === task.target && resolve()))
    await t.start(() => echoed())
    t.connect!(task.target)
    await seen
    const roundTrip = async () => {
      const back = new Promise<void>((resolve) => (echoed = resolve))
      const t0 = performance.now()
      await t.send(task.target, [task.line])
      await back
      return performance.now() - t0
    }
    for (let i = 0; i < task.warmUp; i++) await roundTrip()
    // WebRTC is dialled in the background once we send (up to 10 s later, when the peer's id sorts first): the lines
    // go through the relay until it is up.
    const until = Date.now() + 60_000
    while (task.webrtc && t.stats().directConnections === 0) {
      if (Date.now() > until) throw new Error('no WebRTC connection within 60 s')
      await roundTrip()
      await new Promise((r) => setTimeout(r, 50))
    }
    const rtts: number[] = []
    for (let i = 0; i < task.count; i++) rtts.push(await roundTrip())
    say({ rtts, directPeers: t.stats().directPeers, directConnections: t.stats().directConnections })
    await t.stop()
  }
  process.exit(0)
} catch (error) {
  say({ error: (error as Error).message })
  process.exit(1)
}
