// The REST API over real HTTP: `sluice devnet` (2 nodes, LevelDB storage with sync writes, anvil) in its own
// process, driven from this one with fetch (keep-alive), as an application would.
import { startDevnetCommand } from '../test/cli/devnetProcess.ts'
import { stopSluice } from '../test/cli/sluiceProcess.ts'
import { fmt, percentile, repeat, spread, timed } from './measure.ts'

export async function benchApi(): Promise<Record<string, string>> {
  const { sluice, info } = await startDevnetCommand(['--nodes', '2', '--channels', '--port-base', '0', '--storage', 'level'])
  try {
    const [a, b] = info.nodes as [(typeof info.nodes)[0], (typeof info.nodes)[0]]
    const channels = () => fetch(`${a.api}/channels`)
    const pay = () =>
      fetch(`${a.api}/payments/${info.tokens.TTT}/${b.address}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":"1"}' })
    const rows: Record<string, string> = {}

    for (let i = 0; i < 100; i++) await timed(channels) // warm-up
    const reads: number[] = []
    for (let i = 0; i < 1000; i++) reads.push(await timed(channels))
    rows['GET /channels latency p50 / p99, one at a time (ms)'] = `${fmt(percentile(reads, 50))} / ${fmt(percentile(reads, 99))}`

    for (let i = 0; i < 20; i++) await timed(pay) // warm-up
    const payments: number[] = []
    for (let i = 0; i < 300; i++) payments.push(await timed(pay))
    rows['POST /payments (direct) latency p50 / p99, one at a time (ms)'] = `${fmt(percentile(payments, 50))} / ${fmt(percentile(payments, 99))}`

    // 32 clients, each sending its next request as soon as the last is answered, for a bounded time; three runs.
    const clients = 32
    const seconds = 2
    const latencies: number[] = []
    const rates = await repeat(3, async () => {
      const deadline = performance.now() + seconds * 1000
      let done = 0
      const t0 = performance.now()
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (performance.now() < deadline) {
            latencies.push(await timed(channels))
            done++
          }
        }),
      )
      return done / ((performance.now() - t0) / 1000)
    })
    rows[`GET /channels requests/s, ${clients} concurrent clients (${seconds} s a run)`] = spread(rates)
    rows[`GET /channels latency p50 / p99 under ${clients} clients (ms)`] = `${fmt(percentile(latencies, 50))} / ${fmt(percentile(latencies, 99))}`
    return rows
  } finally {
    await stopSluice(sluice)
  }
}
