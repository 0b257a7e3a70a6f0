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

/** CPU time (user + system, ms) that `f` takes, averaged over `runs`. */
export async function cpuMsPerRun(f: (i: number) => Promise<void>, runs: number): Promise<number> {
  await f(-1)
  const before = process.cpuUsage()
  for (let i = 0; i < runs; i++) await f(i)
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000 / runs
}

export const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2))
