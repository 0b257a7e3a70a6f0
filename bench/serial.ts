// Tasks one at a time per key (src/serialByKey.ts, docs/decisions/0061): our helper against p-queue, p-limit and
// async-mutex, one per key. Throughput of tasks that do nothing (the helper's own cost), in the three shapes the code
// has: a key whose queue is idle (most sends), a burst on one key, a burst spread over many keys; and the gzipped
// bytes each adds to a bundle built as the node worker is (vite, minified).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build } from 'vite'
import { fmt, medianOf, repeat } from './measure.ts'
import { serialOptions, type SerialOption } from './serialOptions.ts'

type Name = keyof typeof serialOptions
const RUNS = 5

/** Tasks queued at once on `keys` keys, `perKey` each, all awaited: tasks a second. */
async function burst(make: () => SerialOption, keys: number, perKey: number): Promise<number> {
  const serial = make()
  const runs: Promise<number>[] = []
  const t0 = performance.now()
  for (let i = 0; i < perKey; i++) for (let k = 0; k < keys; k++) runs.push(serial.run(`k${k}`, async () => i))
  await Promise.all(runs)
  return (keys * perKey) / ((performance.now() - t0) / 1000)
}

/** One task at a time on a key whose queue is idle each time: tasks a second. */
async function oneAtATime(make: () => SerialOption, n: number): Promise<number> {
  const serial = make()
  const t0 = performance.now()
  for (let i = 0; i < n; i++) await serial.run('peer', async () => i)
  return n / ((performance.now() - t0) / 1000)
}

/** Throws unless each key's tasks ran one at a time in the order given, failures included, and every key is forgotten. */
async function check(name: Name, make: () => SerialOption) {
  const serial = make()
  const order = new Map<string, number[]>()
  const running = new Set<string>()
  const runs: Promise<unknown>[] = []
  for (let i = 0; i < 200; i++) {
    const key = `k${i % 7}`
    const task = async () => {
      if (running.has(key)) throw new Error(`${name}: two tasks of ${key} at once`)
      running.add(key)
      await new Promise((r) => setTimeout(r, i % 3))
      order.set(key, [...(order.get(key) ?? []), i])
      running.delete(key)
      if (i % 5 === 0) throw new Error('a failing task')
      return i
    }
    runs.push(serial.run(key, task).catch(() => {}))
  }
  await Promise.all(runs)
  await new Promise((r) => setTimeout(r, 10))
  for (const list of order.values()) if (list.some((v, j) => j > 0 && v < list[j - 1]!)) throw new Error(`${name}: out of order`)
  if (serial.busy !== 0) throw new Error(`${name}: ${serial.busy} keys kept after their tasks`)
}

/** Gzipped bytes of a minified bundle that holds only this option (its wrapper and its library). */
async function bundleBytes(name: Name): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-serial-'))
  try {
    const entry = join(dir, 'entry.ts')
    const options = fileURLToPath(new URL('./serialOptions.ts', import.meta.url))
    const exported = { ours: 'ours', 'p-queue': 'pQueue', 'p-limit': 'pLimitOne', 'async-mutex': 'asyncMutex' }[name]
    writeFileSync(entry, `export { ${exported} as make } from ${JSON.stringify(options)}\n`)
    const result = await build({
      configFile: false,
      logLevel: 'silent',
      root: dir,
      build: { write: false, minify: true, target: 'es2022', lib: { entry, formats: ['es'], fileName: 'entry' } },
    })
    const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => ('output' in r ? r.output : []))
    return outputs.reduce((sum, o) => sum + (o.type === 'chunk' ? gzipSync(o.code).length : 0), 0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export async function benchSerial(): Promise<Record<string, string>> {
  const rows: Record<string, string> = {}
  for (const [name, make] of Object.entries(serialOptions) as [Name, () => SerialOption][]) {
    await check(name, make)
    const idle = await repeat(RUNS, () => oneAtATime(make, 50_000))
    const oneKey = await repeat(RUNS, () => burst(make, 1, 50_000))
    const manyKeys = await repeat(RUNS, () => burst(make, 1_000, 50))
    const bytes = await bundleBytes(name)
    rows[`${name}: tasks a second, one at a time on an idle key / 50,000 at once on one key / 50 each on 1,000 keys at once; gzipped bytes in a bundle`] =
      `${fmt(medianOf(idle))} / ${fmt(medianOf(oneKey))} / ${fmt(medianOf(manyKeys))}; ${fmt(bytes)} B`
  }
  return rows
}
