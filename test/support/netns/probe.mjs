// Small network probes the harness's own tests run inside hosts (`node probe.mjs MODE ...`); plain JavaScript, so a
// probe starts in milliseconds. Each prints one JSON line with what it measured.
//
//   udp-echo PORT                      echoes every datagram; on SIGTERM prints {"received": N}
//   udp-ping HOST PORT COUNT GAP_MS    COUNT numbered datagrams GAP_MS apart; prints {"sent", "rtts": [ms...]}
//   tcp-sink PORT                      takes connections; prints {"bytes", "sha256"} of what each brought
//   tcp-send HOST PORT BYTES           sends BYTES random bytes; prints {"bytes", "sha256"}
//   tcp-connect HOST PORT TIMEOUT_MS   prints {"connected": true|false, "ms"}
//   resolve NAME                       prints {"address"} as getaddrinfo (/etc/hosts) answers
import { createHash, randomBytes } from 'node:crypto'
import dgram from 'node:dgram'
import { lookup } from 'node:dns/promises'
import net from 'node:net'

const [mode, ...args] = process.argv.slice(2)
const print = (o) => process.stdout.write(`${JSON.stringify(o)}\n`)

if (mode === 'udp-echo') {
  const socket = dgram.createSocket('udp4')
  let received = 0
  socket.on('message', (msg, from) => {
    received++
    socket.send(msg, from.port, from.address)
  })
  socket.bind(Number(args[0]), () => print({ listening: true }))
  process.on('SIGTERM', () => {
    print({ received })
    process.exit(0)
  })
} else if (mode === 'udp-ping') {
  const [host, port, count, gap] = [args[0], Number(args[1]), Number(args[2]), Number(args[3])]
  const socket = dgram.createSocket('udp4')
  const sentAt = new Map()
  const rtts = []
  socket.on('message', (msg) => {
    const at = sentAt.get(msg.readUInt32BE(0))
    if (at !== undefined) rtts.push(performance.now() - at)
  })
  let n = 0
  const timer = setInterval(() => {
    const msg = Buffer.alloc(64)
    msg.writeUInt32BE(n, 0)
    sentAt.set(n++, performance.now())
    socket.send(msg, port, host)
    if (n === count) {
      clearInterval(timer)
      // The last echoes are due within a round trip; a second is plenty.
      setTimeout(() => {
        print({ sent: n, rtts })
        process.exit(0)
      }, 1000)
    }
  }, gap)
} else if (mode === 'tcp-sink') {
  const server = net.createServer((conn) => {
    const hash = createHash('sha256')
    let bytes = 0
    conn.on('data', (c) => {
      bytes += c.length
      hash.update(c)
    })
    conn.on('end', () => print({ bytes, sha256: hash.digest('hex') }))
    conn.on('error', () => {})
  })
  server.listen(Number(args[0]), () => print({ listening: true }))
} else if (mode === 'tcp-send') {
  const data = randomBytes(Number(args[2]))
  const conn = net.connect({ host: args[0], port: Number(args[1]) }, () => conn.end(data))
  conn.on('close', () => print({ bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') }))
} else if (mode === 'tcp-connect') {
  const start = performance.now()
  const conn = net.connect({ host: args[0], port: Number(args[1]) })
  const done = (connected) => {
    print({ connected, ms: Math.round(performance.now() - start) })
    conn.destroy()
    process.exit(0)
  }
  conn.on('connect', () => done(true))
  conn.on('error', () => done(false))
  setTimeout(() => done(false), Number(args[2]))
} else if (mode === 'resolve') {
  print({ address: (await lookup(args[0], { family: 4 })).address })
} else {
  console.error(`unknown mode ${mode}`)
  process.exit(2)
}
