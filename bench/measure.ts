import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'

/** Runs `f` repeatedly for about `ms` milliseconds after a warm-up; returns operations per second. */
export function opsPerSecond(f: (i: number) => void, ms = 1000): number {
  for (let i = 0; i < 50; i++) f(i)
  let n = 0
  const t0 = performance.now()
  let t = t0
  while (t - t0 < ms) {
    for (let k = 0; k < 20; k++) f(n++)
    t = performance.now()
  }
  return (n / (t - t0)) * 1000
}

/**
 * How many of the machine's cores were busy, on average, while `f` ran: every process (from /proc/stat, so Linux),
 * the browser, the peers, the relay and anvil alike. Shows whether a rate is bound by the machine, not by one thread.
 */
export async function busyCoresDuring<T>(f: () => Promise<T>): Promise<{ result: T; busyCores: number }> {
  const ticks = () => {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/)
    const values = fields.map(Number)
    // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
    const all = values.slice(0, 8).reduce((a, b) => a + b, 0)
    return { all, busy: all - values[3]! - values[4]! }
  }
  const before = ticks()
  const result = await f()
  const after = ticks()
  return { result, busyCores: ((after.busy - before.busy) / (after.all - before.all)) * availableParallelism() }
}

/** CPU time (user + system, ms) that `f` takes, averaged over `runs`. */
export async function cpuMsPerRun(f: (i: number) => Promise<void>, runs: number): Promise<number> {
  await f(-1)
  const before = process.cpuUsage()
  for (let i = 0; i < runs; i++) await f(i)
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000 / runs
}

export const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2))

/** Runs `f` `times` times (one after the other) and returns each result. */
export async function repeat<T>(times: number, f: (run: number) => Promise<T>): Promise<T[]> {
  const results: T[] = []
  for (let run = 0; run < times; run++) results.push(await f(run))
  return results
}

/** The value below which `p` percent of `values` lie (the nearest rank). */
export const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** The median of `values` (the upper one of an even count). */
export const medianOf = (values: number[]) => percentile(values, 50)

/** A throughput over repetitions, as the bench prints it: "median (min to max, n runs)". */
export function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b)
  return `${fmt(medianOf(values))} (${fmt(sorted[0]!)} to ${fmt(sorted.at(-1)!)}, ${sorted.length} runs)`
}

/** One HTTP request's time to its whole answer (ms); a failed one throws. */
export async function timed(request: () => Promise<Response>): Promise<number> {
  const t0 = performance.now()
  const response = await request()
  await response.arrayBuffer()
  if (!response.ok) throw new Error(`HTTP ${response.status} from ${response.url}`)
  return performance.now() - t0
}
