// The node worker's source maps for the trace summaries (bench/traceProfile.ts): the bundle is minified, so a
// sampled function is found in the sources by where it starts (its line and column in the chunk). The package build
// writes them only when asked, outside dist/ (scripts/build.ts, BuildOptions.sourceMaps); the bench keeps a slim
// copy beside its traces (sources and mappings only, sources relative to the repository or node_modules/).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

type RawSourceMap = { version: number; file?: string; sources: string[]; mappings: string }

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const DIGIT = new Int8Array(128).fill(-1)
for (let i = 0; i < BASE64.length; i++) DIGIT[BASE64.charCodeAt(i)] = i

/** One generated line's segments: their columns, ascending, and each one's source (-1: none). */
type Line = { columns: number[]; sources: number[] }

/** The mappings' segments by generated line (Base64 VLQ: column, source, source line, source column[, name]). */
export function decodeMappings(mappings: string): Line[] {
  const lines: Line[] = [{ columns: [], sources: [] }]
  let column = 0
  let source = 0
  const fields: number[] = []
  let value = 0
  let shift = 0
  const endSegment = () => {
    if (fields.length === 0) return
    column += fields[0]!
    const line = lines.at(-1)!
    line.columns.push(column)
    if (fields.length >= 4) {
      source += fields[1]!
      line.sources.push(source)
    } else line.sources.push(-1)
    fields.length = 0
  }
  for (let i = 0; i < mappings.length; i++) {
    const c = mappings.charCodeAt(i)
    if (c === 44 /* , */) endSegment()
    else if (c === 59 /* ; */) {
      endSegment()
      lines.push({ columns: [], sources: [] })
      column = 0
    } else {
      const digit = DIGIT[c] ?? -1
      if (digit < 0) throw new Error(`not a Base64 VLQ digit: ${mappings[i]}`)
      value += (digit & 31) * 2 ** shift
      shift += 5
      if ((digit & 32) === 0) {
        fields.push(value % 2 === 1 ? -(value - 1) / 2 : value / 2)
        value = 0
        shift = 0
      }
    }
  }
  endSegment()
  return lines
}

export class SourceMap {
  private lines: Line[] | undefined

  constructor(private readonly raw: RawSourceMap) {}

  /** The source of the generated position (0-based line and column), or undefined where nothing maps. */
  sourceAt(line: number, column: number): string | undefined {
    this.lines ??= decodeMappings(this.raw.mappings)
    const { columns, sources } = this.lines[line] ?? { columns: [], sources: [] }
    // The last segment at or before the column.
    let low = 0
    let high = columns.length - 1
    let found = -1
    while (low <= high) {
      const mid = (low + high) >> 1
      if (columns[mid]! <= column) {
        found = mid
        low = mid + 1
      } else high = mid - 1
    }
    const source = found < 0 ? -1 : sources[found]!
    return source < 0 ? undefined : this.raw.sources[source]
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
