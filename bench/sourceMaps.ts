// The node worker's source maps for the trace summaries (bench/traceProfile.ts): the bundle is minified, so a
// sampled function is found in the sources by where it starts (its line and column in the chunk). The package build
// writes them only when asked, outside dist/ (scripts/build.ts, BuildOptions.sourceMaps); the bench keeps a slim
// copy beside its traces (sources and mappings only, sources relative to the repository or node_modules/).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { SourceMap as NodeSourceMap } from 'node:module'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

type RawSourceMap = { version: number; file?: string; sources: string[]; mappings: string }

/** A map of the node worker's chunks, read by Node's own source-map parser (node:module's SourceMap). */
export class SourceMap {
  readonly #map: NodeSourceMap

  constructor(raw: RawSourceMap) {
    this.#map = new NodeSourceMap({ file: '', names: [], sourceRoot: '', sourcesContent: [], ...raw })
  }

  /** The source of the generated position (0-based line and column), or undefined where nothing on that line maps. */
  sourceAt(line: number, column: number): string | undefined {
    // findEntry gives the last segment at or before the position, from an earlier line too: only this line's counts.
    const entry = this.#map.findEntry(line, column)
    return 'generatedLine' in entry && entry.generatedLine === line ? (entry as { originalSource?: string }).originalSource : undefined
  }
}

/** A folder's maps by the name of the file each maps (`node.worker.js.map` maps `node.worker.js`). */
export function loadSourceMaps(dir: string): Map<string, SourceMap> {
  const maps = new Map<string, SourceMap>()
  if (!existsSync(dir)) return maps
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.map')))
    maps.set(file.slice(0, -'.map'.length), new SourceMap(JSON.parse(readFileSync(join(dir, file), 'utf8')) as RawSourceMap))
  return maps
}

/** A source as the categories read it: `node_modules/<package>/...` from the first node_modules, else relative to `root`. */
export function normalizeSource(absolute: string, root: string): string {
  const i = absolute.indexOf('/node_modules/')
  return i >= 0 ? absolute.slice(i + 1) : relative(root, absolute)
}

/** The repository: our own sources are named relative to it. */
const REPOSITORY = fileURLToPath(new URL('..', import.meta.url))

/** Copies the maps of `from` into `to`, slimmed (no sources' text) and with their sources normalized against `root`. */
export function keepSourceMaps(from: string, to: string, root = REPOSITORY): void {
  mkdirSync(to, { recursive: true })
  for (const file of readdirSync(from).filter((f) => f.endsWith('.map'))) {
    const raw = JSON.parse(readFileSync(join(from, file), 'utf8')) as RawSourceMap
    // The build gives them absolute (scripts/build.ts); a relative one is taken as relative to the map.
    const sources = raw.sources.map((s) => normalizeSource(resolve(from, s), root))
    writeFileSync(join(to, file), JSON.stringify({ version: raw.version, file: raw.file, sources, mappings: raw.mappings }))
  }
}
