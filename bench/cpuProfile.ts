// A V8 CPU profile's self time grouped by what the code is: shared by the headless profile (bench/profile.ts, a
// Node inspector session: frames with file URLs) and the Chromium trace summaries (bench/traceProfile.ts, the
// node's worker: frames of the minified bundle, located in the sources by its source maps).
import { Session } from 'node:inspector/promises'

export type CallFrame = { functionName: string; url?: string; lineNumber?: number; columnNumber?: number }
/** A node as the inspector gives it (`children`) or as a trace's ProfileChunk does (`parent`). */
export type ProfileNode = { id: number; callFrame: CallFrame; children?: number[]; parent?: number }

/** Where the profile was taken: Node (bench/profile.ts) or a browser's thread (a trace). */
export type Runtime = 'node' | 'browser'

/** The profile's nodes by id, each with its caller; a trace's chunks add theirs as they come. */
export class ProfileTree {
  readonly nodes = new Map<number, ProfileNode>()
  private readonly parents = new Map<number, number>()

  constructor(nodes: readonly ProfileNode[] = []) {
    this.add(nodes)
  }

  add(nodes: readonly ProfileNode[]): void {
    for (const node of nodes) {
      this.nodes.set(node.id, node)
      if (node.parent !== undefined) this.parents.set(node.id, node.parent)
      for (const child of node.children ?? []) this.parents.set(child, node.id)
    }
  }

  parentOf(id: number): ProfileNode | undefined {
    const parent = this.parents.get(id)
    return parent === undefined ? undefined : this.nodes.get(parent)
  }

  /** The nearest caller of `id` that is JS with a URL (not a native, not V8's own, not WASM). */
  jsCaller(id: number): ProfileNode | undefined {
    for (let n = this.parentOf(id); n; n = this.parentOf(n.id)) if (n.callFrame.url && !n.callFrame.url.startsWith('wasm://')) return n
    return undefined
  }
}

/**
 * Adds each sample's time (µs) to its node's self time: a sample holds the time since the one before it, as
 * `timeDeltas` gives it (a trace's chunks continue where the one before ended).
 */
export function addSamples(self: Map<number, number>, samples: readonly number[], timeDeltas: readonly number[]): Map<number, number> {
  samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (timeDeltas[i] ?? 0)))
  return self
}

/** Self time (µs) summed by `category` of each sampled node, in the order each category was first sampled. */
export function categoryTotals(self: Map<number, number>, category: (id: number) => string): Map<string, number> {
  const totals = new Map<string, number>()
  for (const [id, micros] of self) {
    const key = category(id)
    totals.set(key, (totals.get(key) ?? 0) + micros)
  }
  return totals
}

export const IDLE: Record<Runtime, string> = { node: 'idle (waiting for fsync, timers, I/O)', browser: 'idle' }
export const GARBAGE_COLLECTOR = 'garbage collector'
const PROGRAM: Record<Runtime, string> = {
  node: 'V8 (program)',
  browser: "(program): the browser's own work on the thread outside JS (task and message dispatch)",
}
const NODE_NATIVES = "Node's own code and natives (JSON, v8.serialize, timers, promises, fetch)"
const MESSAGING_NATIVES = 'structured clone and postMessage (natives)'
const PROFILER = "the profiler's own stop (building the profile: not the node's work)"
const NO_CALLER = 'natives and builtins with no JS caller (run by the browser: callbacks, promise jobs)'

/** libp2p and the packages that only it brings (the browser's transport; the headless profile has none). */
const LIBP2P =
  /node_modules\/(@libp2p\/|libp2p\/|@chainsafe\/|@multiformats\/|multiformats\/|it-[\w-]+\/|uint8arraylist\/|uint8arrays\/|uint8-varint\/|protons-runtime\/|main-event\/|race-signal\/|race-event\/|any-signal\/|abort-error\/|progress-events\/|datastore-core\/|interface-datastore\/|interface-store\/|mortice\/|weald\/|hashlru\/|@sindresorhus\/fnv1a\/|denque\/|is-loopback-addr\/|netmask\/|p-defer\/|p-event\/|p-queue\/|p-retry\/|p-timeout\/)/

/**
 * What a code location is: a file URL (Node) or a source path of the bundle's source maps (`src/...`, `worker/...`,
 * `node_modules/<package>/...`, bench/sourceMaps.ts). The first rule that matches names it; the browser's own rows
 * (libp2p, IndexedDB, hono, the worker's glue) never match in the headless profile.
 */
const SOURCE_RULES: readonly (readonly [RegExp, string | Record<Runtime, string>])[] = [
  [/node_modules\/secp256k1\//, 'secp256k1 sign + recover (native libsecp256k1)'],
  [/tiny-secp256k1|hash-wasm|src\/protocol\/(secp256k1|keccak|signature)/, 'crypto glue (JS side of the WASM calls)'],
  // Before src/transport: libp2p's own files are dist/src/transport.js and the like.
  [LIBP2P, 'libp2p (relay connection, noise, yamux, WebSockets)'],
  [
    /classic-level|abstract-level|level-transcoder|node_modules\/idb\/|src\/storage/,
    { node: 'storage (LevelDB, records, encoding)', browser: 'storage (IndexedDB and its calls, records, encoding)' },
  ],
  [/src\/protocol/, 'protocol core (transition, packing, decoding)'],
  [/src\/transport/, 'delivery and transport'],
  [/(^|\/)src\/api\/|node_modules\/hono\//, 'REST handling (hono, src/api)'],
  [/src\/node|src\/chain/, 'runtime (engine, node, chain watcher)'],
  [/viem|@noble/, 'viem / noble (hex and address utilities)'],
  [/^worker\/|node_modules\/comlink\//, "the worker's glue (request channel, comlink: worker/)"],
]

function sourceCategory(source: string, runtime: Runtime): string | undefined {
  for (const [test, label] of SOURCE_RULES) if (test.test(source)) return typeof label === 'string' ? label : label[runtime]
  return undefined
}

/**
 * The browser's code with no rule: a dependency by its package, our own file by its path, a script with no source
 * map by its file (the page's own script is its page).
 */
function browserOther(source: string): string {
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source)
  if (dependency) return `other: ${dependency[1]}`
  if (/^[a-z]+:\/\//.test(source)) {
    const file = new URL(source).pathname.split('/').at(-1)
    return file ? `${file} (no source map)` : "the page's own script"
  }
  return `other: ${source}`
}

/**
 * Which part of the stack the sampled node `id` belongs to. `sourceOf` gives a frame's source: its URL, or (the
 * browser) the source path its bundle's source map gives for the function's start (`undefined`: no map, the URL
 * stands).
 *  - A native (no URL) counts for the code that called it: in Node only for the native addons (secp256k1,
 *    classic-level), in the browser always (IndexedDB's calls are storage's, a WebSocket's send is libp2p's), except
 *    postMessage and structuredClone, a row of their own.
 *  - WASM: in the browser, secp256k1 or keccak by the JS that called it (both modules are unnamed); in Node, one row.
 */
export function categorize(tree: ProfileTree, id: number, runtime: Runtime, sourceOf: (frame: CallFrame) => string | undefined = (f) => f.url): string {
  const node = tree.nodes.get(id)
  if (!node) return 'other'
  const { functionName, url = '' } = node.callFrame
  if (functionName === '(idle)') return IDLE[runtime]
  if (functionName === '(garbage collector)') return GARBAGE_COLLECTOR
  if (functionName === '(program)') return PROGRAM[runtime]
  if (url.startsWith('wasm://')) {
    if (runtime === 'node') return 'WASM: keccak (and secp256k1 where the native addon is missing)'
    const caller = tree.jsCaller(id)
    const source = caller ? (sourceOf(caller.callFrame) ?? caller.callFrame.url ?? '') : ''
    if (/secp256k1/.test(source)) return 'secp256k1 (WASM: libsecp256k1)'
    if (/hash-wasm|keccak/.test(source)) return 'keccak (WASM: hash-wasm)'
    return 'WASM (caller unknown)'
  }
  // Profiler.stop builds the profile on the sampled thread itself: its time is the measurement's, not the node's.
  if (runtime === 'node' && (url === 'node:inspector' || (url === '' && tree.parentOf(id)?.callFrame.url === 'node:inspector'))) return PROFILER
  if (url === '' && !functionName.startsWith('(')) {
    if (functionName === 'postMessage' || functionName === 'structuredClone') return MESSAGING_NATIVES
    if (runtime === 'node') {
      const parent = tree.parentOf(id)
      return parent && /node_modules\/(secp256k1|classic-level)\//.test(parent.callFrame.url ?? '')
        ? categorize(tree, parent.id, runtime, sourceOf)
        : NODE_NATIVES
    }
    const caller = tree.jsCaller(id)
    return caller ? categorize(tree, caller.id, runtime, sourceOf) : NO_CALLER
  }
  if (runtime === 'node') return sourceCategory(url, runtime) ?? (url === '' || url.startsWith('node:') ? NODE_NATIVES : 'other')
  const source = sourceOf(node.callFrame) ?? url
  return sourceCategory(source, runtime) ?? browserOther(source)
}

/** A profile as Node's inspector returns it (`Profiler.stop`). */
export type InspectorProfile = { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[] }

/** A Node profile's self time (µs) by what the code is: the headless profiles' one step from samples to categories. */
export function nodeCategoryTotals(profile: InspectorProfile): Map<string, number> {
  const tree = new ProfileTree(profile.nodes)
  const self = addSamples(new Map(), profile.samples ?? [], profile.timeDeltas ?? [])
  return categoryTotals(self, (id) => categorize(tree, id, 'node'))
}

/**
 * Starts V8's sampling profiler on this thread (every 100 µs), through an inspector session of its own; the function
 * returned stops it and gives the profile. The headless profiles (bench/profile.ts, each node's thread in bench/node.ts).
 */
export async function startCpuProfile(): Promise<() => Promise<InspectorProfile>> {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 100 })
  await session.post('Profiler.start')
  return async () => {
    const { profile } = await session.post('Profiler.stop')
    session.disconnect()
    return profile
  }
}

/**
 * The time (µs) of the samples whose stack passes through a frame `inside` picks (inclusive time): how much of a
 * thread's work ran within one function and what it called, such as the engine's loop.
 */
export function inclusiveMicros(profile: InspectorProfile, inside: (frame: CallFrame) => boolean): number {
  const tree = new ProfileTree(profile.nodes)
  const known = new Map<number, boolean>()
  const under = (id: number): boolean => {
    const cached = known.get(id)
    if (cached !== undefined) return cached
    const node = tree.nodes.get(id)
    const parent = tree.parentOf(id)
    const found = node !== undefined && (inside(node.callFrame) || (parent !== undefined && under(parent.id)))
    known.set(id, found)
    return found
  }
  const samples = profile.samples ?? []
  const deltas = profile.timeDeltas ?? []
  let micros = 0
  samples.forEach((id, i) => {
    if (under(id)) micros += deltas[i] ?? 0
  })
  return micros
}
