// One `sluice relay` in its own process, measured from outside (/proc): how many messages a second it carries
// between pairs of nodes and its CPU per message; how many nodes it holds with reservations, its memory per node,
// and the CPU it spends while they only announce themselves. The nodes are real transports
// (createLibp2pTransport) in child processes of their own (bench/relayClients.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { relayListening, startSluice, stopSluice } from '../test/cli/sluiceProcess.ts'
import { busyCoresDuring, fmt, medianOf } from './measure.ts'

/** About the size of a LockedTransfer line. */
const LINE = JSON.stringify({ type: 'LockedTransfer', pad: 'x'.repeat(900) })
const CLIENT = new URL('./relayClients.ts', import.meta.url).pathname
/** How many nodes hold reservations at each step (SLUICE_BENCH_RELAY_STEPS=100,200 for a short run). */
const STEPS = (process.env.SLUICE_BENCH_RELAY_STEPS ?? '200,500,1000').split(',').map(Number)
const TICKS_PER_SECOND = 100 // USER_HZ on Linux
/** How many of the others each held node wants to hear of (its channel partners, say). */
const PARTNERS = 2

/** The relay process's CPU (ms, user + system) and resident memory (MiB), from /proc. */
function usage(pid: number) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const cpuMs = ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1000
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024
  return { cpuMs, rssMiB: rss }
}

type Client = { child: ChildProcess; next(predicate: (m: Record<string, unknown>) => boolean, timeoutMs: number): Promise<Record<string, unknown>> }

function startClient(task: unknown): Client {
  const child = spawn(process.execPath, ['--import', 'tsx', CLIENT, JSON.stringify(task)], { stdio: ['pipe', 'pipe', 'inherit'] })
  const messages: Record<string, unknown>[] = []
  const waiters = new Set<() => void>()
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (!line.startsWith('{')) return
    messages.push(JSON.parse(line) as Record<string, unknown>)
    for (const w of waiters) w()
  })
  return {
    child,
    next(predicate, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const i = messages.findIndex((m) => predicate(m) || 'error' in m)
          if (i < 0) return
          const [m] = messages.splice(0, i + 1).slice(-1)
          cleanup()
          if ('error' in m!) reject(new Error(`relay client: ${String(m!.error)}`))
          else resolve(m!)
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`relay client: nothing within ${timeoutMs} ms`))
        }, timeoutMs)
        const cleanup = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
  }
}

async function stopClient(client: Client) {
  client.child.stdin!.end()
  await new Promise<void>((resolve) => {
    if (client.child.exitCode !== null) return resolve()
    const killed = setTimeout(() => client.child.kill('SIGKILL'), 30_000)
    client.child.once('exit', () => {
      clearTimeout(killed)
      resolve()
    })
  })
}

/** Progress on stderr: the part runs for minutes. */
const progress = (what: string) => process.stderr.write(`relay capacity: ${what}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function benchRelayCapacity(): Promise<Record<string, string>> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-relay-'))
  // Every node here comes from 127.0.0.1: the relay's limits per address and per peer (docs/decisions/0064) lifted,
  // so that it measures the relay, not its limits.
  const unlimited = ['--max-connection-rate', '--max-circuit-rate', '--max-connections-per-ip', '--max-reservations-per-ip'].flatMap((flag) => [flag, '100000'])
  const unmetered = ['--peer-bytes-per-second', '--ip-bytes-per-second'].flatMap((flag) => [flag, String(2 ** 40)])
  const relay = startSluice(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws', '--max-reservations', '100000', ...unlimited, ...unmetered], dir)
  const clients: Client[] = []
  const rows: Record<string, string> = {}
  try {
    await relay.waitForOutput(/Press Ctrl-C to stop/)
    const { multiaddrs } = relayListening(relay.stdout())!
    const pid = relay.child.pid!
    await sleep(1000)
    const idle = usage(pid)
    rows['relay process at rest: resident memory (MiB)'] = fmt(idle.rssMiB)

    // Messages a second: 8 pairs, each sender keeping 16 lines in flight, in two client processes; three 3-second windows.
    const PAIRS = 4
    for (let i = 0; i < 2; i++) clients.push(startClient({ mode: 'pairs', relay: multiaddrs, pairs: PAIRS, window: 16, line: LINE }))
    await Promise.all(clients.map((c) => c.next((m) => m.ready === true, 60_000)))
    progress('pairs ready')
    await sleep(2000) // warm-up
    const rates: number[] = []
    const cpuPerMessage: number[] = []
    let busy = 0
    for (let run = 0; run < 3; run++) {
      const count = async () => {
        const got = await Promise.all(clients.map((c) => c.next((m) => typeof m.received === 'number', 5_000)))
        return got.reduce((sum, m) => sum + (m.received as number), 0)
      }
      const before = usage(pid)
      const start = await count()
      const t0 = performance.now()
      const { result: end, busyCores } = await busyCoresDuring(async () => {
        await sleep(3000)
        return count()
      })
      const seconds = (performance.now() - t0) / 1000
      const after = usage(pid)
      rates.push((end - start) / seconds)
      cpuPerMessage.push((after.cpuMs - before.cpuMs) / (end - start))
      busy = Math.max(busy, busyCores)
    }
    await Promise.all(clients.splice(0).map(stopClient))
    rows[`messages a second through one relay (${fmt(LINE.length)}-byte lines, ${PAIRS * 2} pairs of nodes, 16 in flight each; median of 3 runs of 3 s)`] =
      `${fmt(medianOf(rates))} (machine: ${busy.toFixed(1)} of 2 cores busy)`
    rows["relay's CPU per message (µs; Noise in and out, yamux, the circuit's two streams)"] = fmt(medianOf(cpuPerMessage) * 1000)

    // Reservations: nodes added in steps, in two client processes; memory and idle CPU at each step.
    await sleep(2000)
    const base = usage(pid)
    let held = 0
    for (const target of STEPS) {
      const add = (target - held) / 2
      const t0 = performance.now()
      const step = [0, 1].map(() => startClient({ mode: 'hold', relay: multiaddrs, peers: add, partners: PARTNERS }))
      clients.push(...step)
      const answers = await Promise.all(step.map((c) => c.next((m) => typeof m.held === 'number', 15 * 60_000)))
      const failed = answers.reduce((sum, m) => sum + (m.failed as number), 0)
      if (failed > 0) rows[`${fmt(target)} nodes asked: connected but without a reservation after 60 s`] = fmt(failed)
      held = target
      progress(`${held} nodes hold reservations`)
      const joinMs = performance.now() - t0
      await sleep(5000) // let the announcements of the newcomers settle
      const heard = async () => {
        const got = await Promise.all(clients.map((c) => c.next((m) => typeof m.heard === 'number', 5_000)))
        return got.reduce((sum, m) => sum + (m.heard as number), 0)
      }
      const heardBefore = await heard()
      const a = usage(pid)
      await sleep(30_000) // a 30 s window at rest: what presence costs while nothing else happens
      const b = usage(pid)
      const heardInWindow = (await heard()) - heardBefore
      rows[`${fmt(held)} nodes with reservations: relay memory (MiB) / per node (KiB)`] = `${fmt(b.rssMiB)} / ${fmt(((b.rssMiB - base.rssMiB) * 1024) / held)}`
      rows[`${fmt(held)} nodes with reservations: relay CPU at rest (share of one core) / time to join (s)`] =
        `${((b.cpuMs - a.cpuMs) / 30_000).toFixed(2)} / ${fmt(joinMs / 1000)}`
      rows[`${fmt(held)} nodes with reservations: presence announcements each node received a minute at rest (each watching ${PARTNERS} others)`] = fmt(
        (heardInWindow / held) * 2,
      )
    }
    return rows
  } finally {
    await Promise.allSettled(clients.map(stopClient))
    await stopSluice(relay)
    rmSync(dir, { recursive: true, force: true })
  }
}
