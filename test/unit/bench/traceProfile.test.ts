import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { summarizeTrace, summaryRows, type ThreadSummary } from '../../../bench/traceProfile.ts'
import { tempDirs } from '../../support/tempDirs.ts'

/** The trace summaries of bench/traceProfile.ts on a small trace made by hand, shaped as Chromium writes them. */

const tempDir = tempDirs('sluice-trace-profile-')

const PAGE = 10
const OTHER_RENDERER = 30
const BROWSER = 20
const T0 = 1_000_000
const WORKER_URL = 'http://127.0.0.1:8080/sluice/node.worker.js'

const meta = (name: 'thread_name' | 'process_name', pid: number, tid: number, value: string) => ({
  args: { name: value },
  cat: '__metadata',
  name,
  ph: 'M',
  pid,
  tid,
  ts: 0,
})
const js = (id: number, parent: number, functionName: string, url?: string, columnNumber?: number) => ({
  callFrame: { codeType: 'JS', functionName, scriptId: url ? 3 : 0, ...(url ? { url, lineNumber: 0, columnNumber } : {}) },
  id,
  parent,
})
const special = (id: number, functionName: string) => ({ callFrame: { codeType: 'other', functionName, scriptId: 0 }, id, ...(id === 1 ? {} : { parent: 1 }) })
const profile = (pid: number, tid: number, id: string) => ({
  args: { data: { startTime: T0 } },
  cat: 'disabled-by-default-v8.cpu_profiler',
  id,
  name: 'Profile',
  ph: 'P',
  pid,
  tid,
  ts: T0,
})
/** A chunk as the profiler thread of the process (`tid`) writes it, for the profile `id`. */
const chunk = (pid: number, tid: number, id: string, nodes: object[], samples: number[], timeDeltas: number[]) => ({
  args: { data: { cpuProfile: { nodes, samples }, timeDeltas } },
  cat: 'disabled-by-default-v8.cpu_profiler',
  id,
  name: 'ProfileChunk',
  ph: 'P',
  pid,
  tid,
  ts: T0 + 1,
})
const task = (pid: number, tid: number, ts: number, dur: number, tdur: number, cat = 'toplevel') => ({ cat, name: 'RunTask', ph: 'X', pid, tid, ts, dur, tdur })

/**
 * The page's renderer (its main thread, its service worker, the node's worker, one profiler thread writing every
 * profile's chunks), another renderer whose worker's profile has the same id as the node's worker's, and the browser.
 * Self time of the node's worker, µs: idle 100 + 5,000; storage (its code, then IndexedDB's put) 1,000 + 2,000;
 * secp256k1's WASM (called from tiny-secp256k1's JS, then WASM calling WASM) 3,000 + 500; postMessage 400; protocol
 * 700; GC 300; program 200: busy 8,100 of 13,200.
 */
const TRACE = {
  traceEvents: [
    meta('process_name', PAGE, 0, 'Renderer'),
    meta('process_name', OTHER_RENDERER, 0, 'Renderer'),
    meta('process_name', BROWSER, 0, 'Browser'),
    meta('thread_name', PAGE, 11, 'CrRendererMain'),
    meta('thread_name', PAGE, 12, 'ServiceWorker thread'),
    meta('thread_name', PAGE, 13, 'DedicatedWorker thread'),
    meta('thread_name', PAGE, 19, 'v8:ProfEvntProc'),
    meta('thread_name', OTHER_RENDERER, 31, 'DedicatedWorker thread'),
    meta('thread_name', BROWSER, 21, 'Chrome_IOThread'),
    meta('thread_name', BROWSER, 22, 'ThreadPoolForegroundWorker'),
    meta('thread_name', BROWSER, 23, 'ThreadPoolForegroundWorker'),
    profile(PAGE, 13, '0x1'),
    profile(PAGE, 11, '0x2'),
    profile(OTHER_RENDERER, 31, '0x1'),
    chunk(
      PAGE,
      19,
      '0x1',
      [
        special(1, '(root)'),
        special(2, '(program)'),
        special(3, '(idle)'),
        js(4, 1, 'a', WORKER_URL, 5),
        js(5, 4, 'put'),
        js(6, 1, 'b', WORKER_URL, 120),
        js(7, 6, 'wasm-function[1]', 'wasm://wasm/0a1b2c3d', 0),
      ],
      [3, 4, 5, 7],
      [100, 1000, 2000, 3000],
    ),
    // The page's chunk between the worker's two, from the same profiler thread.
    chunk(
      PAGE,
      19,
      '0x2',
      [special(1, '(root)'), special(2, '(idle)'), special(3, '(program)'), js(4, 1, '', 'http://127.0.0.1:8080/', 0)],
      [4, 2, 3],
      [1000, 8000, 2000],
    ),
    chunk(
      PAGE,
      19,
      '0x1',
      [js(8, 7, 'wasm-function[2]', 'wasm://wasm/0a1b2c3d', 0), js(9, 4, 'postMessage'), js(10, 1, 'c', WORKER_URL, 250), special(11, '(garbage collector)')],
      [8, 9, 10, 11, 3, 2],
      [500, 400, 700, 300, 5000, 200],
    ),
    // Another renderer's worker (the same profile id in its own process): 50 ms busy, none of it the node's worker's.
    chunk(OTHER_RENDERER, 39, '0x1', [special(1, '(root)'), js(2, 1, 'k', 'http://127.0.0.1:8080/kdf.worker.js', 0)], [2], [50_000]),
    task(PAGE, 13, T0, 9000, 6000),
    // The browser's IO thread: a task with one inside it (counted once), another later, and a non-top-level event.
    task(BROWSER, 21, T0, 4000, 1000),
    task(BROWSER, 21, T0 + 1000, 1000, 500),
    task(BROWSER, 21, T0 + 10_000, 1000, 1000),
    task(BROWSER, 21, T0 + 20_000, 10_000, 10_000, 'devtools.timeline'),
    task(BROWSER, 22, T0, 2000, 2000),
    task(BROWSER, 23, T0, 3000, 1000),
  ],
  metadata: { 'trace-config': { nested: [{ not: 'an event' }] } },
}

/** src/storage from column 0 of the chunk's line, tiny-secp256k1 from column 100, src/protocol from 200 (VLQ by hand). */
const WORKER_MAP = {
  version: 3,
  file: 'node.worker.js',
  sources: ['src/storage/idbStorage.ts', 'node_modules/tiny-secp256k1/lib/index.js', 'src/protocol/transfer.ts'],
  mappings: 'AAAA,oGCAA,oGCAA',
}

function writeTrace(): string {
  const dir = tempDir()
  const file = join(dir, 't.json')
  writeFileSync(file, `{"traceEvents":[\n${TRACE.traceEvents.map((e) => JSON.stringify(e)).join(',\n')}],\n"metadata":${JSON.stringify(TRACE.metadata)}}\n`)
  mkdirSync(join(dir, 't-sourcemaps'))
  writeFileSync(join(dir, 't-sourcemaps', 'node.worker.js.map'), JSON.stringify(WORKER_MAP))
  return file
}

const thread = (threads: ThreadSummary[], label: string) => {
  const found = threads.find((t) => t.label === label)
  if (!found) throw new Error(`no thread ${label} in ${threads.map((t) => t.label).join(', ')}`)
  return found
}

describe('summarizeTrace', () => {
  test("each JS thread's busy time and self time by category, the chunks attributed by their profile, not by the thread that wrote them", async () => {
    const summary = await summarizeTrace(writeTrace(), { payments: 2 })
    // From the profiles' start to the other renderer's last sample.
    expect(summary.windowMs).toBe(50)
    expect(summary.located).toBe('source maps')
    expect(summary.threads.slice(0, 2).map((t) => t.label)).toEqual(["the page's main thread", "the node's worker"])
    const worker = thread(summary.threads, "the node's worker")
    expect(worker).toMatchObject({ pid: PAGE, tids: [13], busyMs: 8.1, cpuMs: 6 })
    expect(worker.share).toBeCloseTo(8.1 / 50, 12)
    expect(Object.fromEntries(worker.categories!)).toEqual({
      'secp256k1 (WASM: libsecp256k1)': 3.5,
      'storage (IndexedDB and its calls, records, encoding)': 3,
      'protocol core (transition, packing, decoding)': 0.7,
      'structured clone and postMessage (natives)': 0.4,
      'garbage collector': 0.3,
      "(program): the browser's own work on the thread outside JS (task and message dispatch)": 0.2,
    })
    expect(worker.categories!.map(([, ms]) => ms)).toEqual([3.5, 3, 0.7, 0.4, 0.3, 0.2])
    const page = thread(summary.threads, "the page's main thread")
    expect(page).toMatchObject({ tids: [11], busyMs: 3 })
    expect(page.share).toBeCloseTo(3 / 50, 12)
    expect(Object.fromEntries(page.categories!)).toEqual({
      "(program): the browser's own work on the thread outside JS (task and message dispatch)": 2,
      "the page's own script": 1,
    })
    expect(thread(summary.threads, 'DedicatedWorker thread')).toMatchObject({ pid: OTHER_RENDERER, busyMs: 50, share: 1 })
  })

  test("other threads: the union of their top-level tasks, wall and CPU time; a process's pool summed", async () => {
    const { threads } = await summarizeTrace(writeTrace())
    expect(thread(threads, 'Browser: Chrome_IOThread')).toMatchObject({ busyMs: 5, cpuMs: 2, share: 0.1 })
    expect(thread(threads, 'Browser: thread pool (2 threads, summed)')).toMatchObject({ tids: [22, 23], busyMs: 5, cpuMs: 3 })
  })

  test('per payment in the rows, and without source maps the worker by its chunks', async () => {
    const file = writeTrace()
    const rows = summaryRows(await summarizeTrace(file, { payments: 2 }), 'trace')
    expect(rows["trace: the node's worker, busy (sampled, not idle), ms per payment, share of the window; CPU time"]).toBe('4.05 (16%); CPU 3.00')
    expect(rows['trace: the traced window']).toMatch(/^0\.05 s, 2 payments: 25\.0 ms of wall time per payment; .* its source maps$/)
    const unmapped = await summarizeTrace(file, { sourceMaps: join(file, '..', 'none') })
    expect(unmapped.located).toBe('chunks')
    expect(Object.fromEntries(thread(unmapped.threads, "the node's worker").categories!)).toMatchObject({
      'node.worker.js (no source map)': 3.7,
      'WASM (caller unknown)': 3.5,
    })
  })
})
