// What a Chromium trace of the bench's payments says bounds them (`npm run bench -- browser --trace FILE` writes the
// traces; bench/browser.ts prints their summaries): each thread's busy time and its share of the window's wall time,
// and for each JS thread (the page's, the service worker's, the node's worker) its self time by what the code is,
// per payment. `npx tsx bench/traceProfile.ts FILE [payments] [--maps DIR]` summarizes a trace written earlier.
//
// The JS threads' figures come from V8's CPU samples (the Profile and ProfileChunk events: a profile's chunks come
// from a profiler thread, the profile's own event names the thread it samples); every thread's busy time and CPU time
// come from its top-level tasks (the `toplevel` category's complete events: wall duration and thread time).
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { addSamples, type CallFrame, categorize, categoryTotals, IDLE, type ProfileNode, ProfileTree } from './cpuProfile.ts'
import { loadSourceMaps, type SourceMap } from './sourceMaps.ts'
import { readTraceEvents, type TraceEvent } from './traceEvents.ts'

/** One thread (or a process's pool of threads, summed), its figures in ms over the whole window. */
export type ThreadSummary = {
  /** What it is: "the node's worker", "the page's main thread", "Browser: Chrome_IOThread"... */
  label: string
  pid: number
  tids: number[]
  /** JS threads: sampled time not idle; other threads: the union of their top-level tasks. */
  busyMs: number
  /** Thread (CPU) time of the top-level tasks, where the trace has it. */
  cpuMs: number
  /** busyMs over the window's wall time (a pool's threads summed: may exceed 1). */
  share: number
  /** JS threads: self time (ms) by category, largest first, idle left out. */
  categories?: [string, number][]
}

export type TraceSummary = {
  file: string
  /** From the first sample of any thread to the last (ms). */
  windowMs: number
  payments?: number
  /** 'source maps' when the node worker's frames were located in the sources, else 'chunks' (the bundle's files). */
  located: 'source maps' | 'chunks'
  /** The page's, the service worker's and the node's worker's threads first, then the others by busy time. */
  threads: ThreadSummary[]
}

/** The bench's second trace (32 in flight) beside the first: `t.json` and `t-in-flight.json`. */
export function inFlightTraceFile(trace: string): string {
  return trace.replace(/(\.json)?$/, '-in-flight.json')
}

/** The folder of source maps the bench keeps beside its traces: `t.json` and `t-in-flight.json` share `t-sourcemaps/`. */
export function traceSourceMapsDir(trace: string): string {
  return trace.replace(/(-in-flight)?(\.json)?$/, '-sourcemaps')
}

type Profile = { pid: number; tid?: number; startUs?: number; elapsedUs: number; tree: ProfileTree; self: Map<number, number> }
type ThreadKey = `${number}:${number}`

/** Top-level tasks of a thread as [start, duration, thread duration] triples (µs). */
type Tasks = number[]

/** The outermost tasks' wall time and thread time (µs): a task inside another counts once. */
function taskTimes(tasks: Tasks): { wall: number; cpu: number } {
  const order = Array.from({ length: tasks.length / 3 }, (_, i) => i).sort((a, b) => tasks[a * 3]! - tasks[b * 3]! || tasks[b * 3 + 1]! - tasks[a * 3 + 1]!)
  let wall = 0
  let cpu = 0
  let end = -Infinity
  for (const i of order) {
    const [start, dur, tdur] = [tasks[i * 3]!, tasks[i * 3 + 1]!, tasks[i * 3 + 2]!]
    if (start >= end) {
      wall += dur
      cpu += tdur
      end = start + dur
    } else if (start + dur > end) {
      // Overlapping without nesting (clock skew): only the part beyond the task before.
      wall += start + dur - end
      end = start + dur
    }
  }
  return { wall, cpu }
}

/** A frame's source by the node worker's maps (keyed by the chunk's file name), cached by position. */
function sourceLocator(maps: Map<string, SourceMap>) {
  const cache = new Map<string, string | undefined>()
  return (frame: CallFrame): string | undefined => {
    const { url = '', lineNumber = -1, columnNumber = -1 } = frame
    if (!/^https?:/.test(url) || lineNumber < 0) return undefined
    const key = `${url}:${lineNumber}:${columnNumber}`
    if (cache.has(key)) return cache.get(key)
    const map = maps.get(new URL(url).pathname.split('/').at(-1)!)
    const source = map?.sourceAt(lineNumber, columnNumber)
    cache.set(key, source)
    return source
  }
}

/** A sampled thread's role, from its name and what code it ran. */
function jsThreadLabel(threadName: string, tree: ProfileTree): string {
  const urls = [...tree.nodes.values()].map((n) => n.callFrame.url ?? '')
  if (threadName === 'DedicatedWorker thread' && urls.some((u) => /\/node\.worker\.js$/.test(u))) return "the node's worker"
  if (threadName === 'ServiceWorker thread') return 'the service worker'
  if (threadName === 'CrRendererMain') return "the page's main thread"
  return threadName
}

const ms = (micros: number) => micros / 1000

/**
 * Summarizes the trace `file`: `payments` made in its window (for per-payment figures), `sourceMaps` the folder of
 * the node worker's maps (default: the one the bench keeps beside the trace; without it, categories by chunk).
 */
export async function summarizeTrace(file: string, options: { payments?: number; sourceMaps?: string } = {}): Promise<TraceSummary> {
  const threadNames = new Map<ThreadKey, string>()
  const processNames = new Map<number, string>()
  const profiles = new Map<string, Profile>()
  const tasks = new Map<ThreadKey, Tasks>()
  const profileOf = (pid: number, id: string) => {
    const key = `${pid}:${id}`
    const profile: Profile = profiles.get(key) ?? { pid, elapsedUs: 0, tree: new ProfileTree(), self: new Map() }
    profiles.set(key, profile)
    return profile
  }
  await readTraceEvents(file, (event: TraceEvent) => {
    const { pid = 0, tid = 0 } = event
    if (event.ph === 'M') {
      const name = (event.args as { name?: string } | undefined)?.name
      if (event.name === 'thread_name' && name) threadNames.set(`${pid}:${tid}`, name)
      if (event.name === 'process_name' && name) processNames.set(pid, name)
    } else if (event.name === 'Profile' && event.id) {
      // The profile's own event is on the thread it samples.
      const profile = profileOf(pid, event.id)
      profile.tid = tid
      profile.startUs = (event.args as { data?: { startTime?: number } }).data?.startTime ?? event.ts
    } else if (event.name === 'ProfileChunk' && event.id) {
      // Its chunks come from the process's profiler thread: the id (within the process) says whose they are.
      const data = (event.args as { data?: { cpuProfile?: { nodes?: ProfileNode[]; samples?: number[] }; timeDeltas?: number[] } }).data ?? {}
      const profile = profileOf(pid, event.id)
      profile.tree.add(data.cpuProfile?.nodes ?? [])
      const deltas = data.timeDeltas ?? []
      addSamples(profile.self, data.cpuProfile?.samples ?? [], deltas)
      for (const delta of deltas) profile.elapsedUs += delta
    } else if (event.ph === 'X' && event.cat?.split(',').includes('toplevel') && event.ts !== undefined) {
      const key: ThreadKey = `${pid}:${tid}`
      const list = tasks.get(key) ?? []
      tasks.set(key, list)
      list.push(event.ts, event.dur ?? 0, event.tdur ?? 0)
    }
  })

  const sampled = [...profiles.values()].filter((p) => p.tid !== undefined && p.startUs !== undefined)
  const windowStart = Math.min(...sampled.map((p) => p.startUs!))
  const windowEnd = Math.max(...sampled.map((p) => p.startUs! + p.elapsedUs))
  if (!(windowEnd > windowStart)) throw new Error(`${file}: no CPU samples (was it traced with disabled-by-default-v8.cpu_profiler?)`)
  const windowUs = windowEnd - windowStart
  const maps = loadSourceMaps(options.sourceMaps ?? traceSourceMapsDir(file))
  const sourceOf = sourceLocator(maps)
  const times = new Map([...tasks].map(([key, list]) => [key, taskTimes(list)]))

  const js: ThreadSummary[] = sampled.map((p) => {
    const key: ThreadKey = `${p.pid}:${p.tid!}`
    const totals = categoryTotals(p.self, (id) => categorize(p.tree, id, 'browser', sourceOf))
    totals.delete(IDLE.browser)
    const busy = [...totals.values()].reduce((a, b) => a + b, 0)
    return {
      label: jsThreadLabel(threadNames.get(key) ?? `thread ${p.tid}`, p.tree),
      pid: p.pid,
      tids: [p.tid!],
      busyMs: ms(busy),
      cpuMs: ms(times.get(key)?.cpu ?? 0),
      share: busy / windowUs,
      categories: [...totals].sort((a, b) => b[1] - a[1]).map(([name, micros]) => [name, ms(micros)] as [string, number]),
    }
  })
  const order = ["the page's main thread", 'the service worker', "the node's worker"]
  js.sort((a, b) => (order.indexOf(a.label) + 1 || 99) - (order.indexOf(b.label) + 1 || 99))

  // The other threads, a process's pools (ThreadPoolForegroundWorker and the like) as one row each. The process
  // of the sampled threads is the page's renderer; other processes go by name (and pid if the name is not theirs alone).
  const sampledKeys = new Set(sampled.map((p) => `${p.pid}:${p.tid}`))
  const pagePids = new Set(js.filter((t) => order.includes(t.label)).map((t) => t.pid))
  const names = [...processNames.values()]
  const processLabel = (pid: number) => {
    if (pagePids.has(pid)) return "the page's renderer"
    const name = processNames.get(pid)
    return name && names.indexOf(name) === names.lastIndexOf(name) ? name : `${name ?? 'process'} ${pid}`
  }
  const others = new Map<string, ThreadSummary>()
  for (const [key, { wall, cpu }] of times) {
    if (sampledKeys.has(key)) continue
    const [pid, tid] = key.split(':').map(Number) as [number, number]
    const name = threadNames.get(key) ?? `thread ${tid}`
    const pool = /^ThreadPool(Foreground|Background)Worker$/.test(name)
    const owner = processLabel(pid)
    // What only the tracing costs: its service, its threads, and DevTools' pipe that carries the trace out.
    const tracing = /tracing/i.test(owner) || /^(PerfettoTrace|DevToolsPipeHandler)/.test(name) ? ' (the tracing itself)' : ''
    const label = `${owner}: ${pool ? 'thread pool' : name}${tracing}`
    const row = others.get(label) ?? { label, pid, tids: [], busyMs: 0, cpuMs: 0, share: 0 }
    row.tids.push(tid)
    row.busyMs += ms(wall)
    row.cpuMs += ms(cpu)
    row.share += wall / windowUs
    others.set(label, row)
  }
  for (const row of others.values()) if (row.tids.length > 1) row.label += ` (${row.tids.length} threads, summed)`
  return {
    file,
    windowMs: ms(windowUs),
    ...(options.payments ? { payments: options.payments } : {}),
    located: maps.size > 0 ? 'source maps' : 'chunks',
    threads: [...js, ...[...others.values()].sort((a, b) => b.busyMs - a.busyMs)],
  }
}

const fixed = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2))
const percent = (share: number) => `${(share * 100).toFixed(share < 0.1 ? 1 : 0)}%`

/**
 * The summary as rows of a bench table, each figure in ms per payment (ms in all without `payments`): the window, and
 * each thread busy at least `minShare` of it (the JS threads always), with its self time by category.
 */
export function summaryRows(summary: TraceSummary, title: string, minShare = 0.02): Record<string, string> {
  const per = summary.payments ?? 1
  const unit = summary.payments ? 'ms per payment' : 'ms'
  const rows: Record<string, string> = {}
  rows[`${title}: the traced window`] =
    `${(summary.windowMs / 1000).toFixed(2)} s` +
    (summary.payments ? `, ${summary.payments.toLocaleString('en-US')} payments: ${fixed(summary.windowMs / per)} ms of wall time per payment` : '') +
    `; the node worker's code located by ${summary.located === 'source maps' ? 'its source maps' : 'chunk (no source maps found)'}`
  for (const t of summary.threads) {
    if (!t.categories && t.share < minShare) continue
    const what = t.categories ? 'busy (sampled, not idle)' : 'busy (its top-level tasks)'
    rows[`${title}: ${t.label}, ${what}, ${unit}, share of the window; CPU time`] =
      `${fixed(t.busyMs / per)} (${percent(t.share)}); CPU ${fixed(t.cpuMs / per)}`
    if (t.categories) {
      const shown = t.categories.filter(([, v]) => v / per >= 0.01)
      const rest = t.categories.slice(shown.length).reduce((sum, [, v]) => sum + v, 0)
      rows[`${title}: ${t.label}, self time by category, ${unit}`] =
        shown.map(([name, v]) => `${name} ${fixed(v / per)}`).join('; ') + (rest / per >= 0.005 ? `; the rest ${fixed(rest / per)}` : '')
    }
  }
  return rows
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { maps: { type: 'string' } } })
  const [file, count] = positionals
  const payments = count === undefined ? undefined : Number(count)
  if (!file || (payments !== undefined && !(Number.isInteger(payments) && payments > 0))) {
    console.error('usage: npx tsx bench/traceProfile.ts FILE [payments] [--maps DIR]')
    process.exit(2)
  }
  const summary = await summarizeTrace(file, { ...(payments ? { payments } : {}), ...(values.maps ? { sourceMaps: values.maps } : {}) })
  console.log(`\n### ${file}\n\n| measure | value |\n| --- | --- |`)
  for (const [k, v] of Object.entries(summaryRows(summary, 'trace'))) console.log(`| ${k} | ${v} |`)
}
