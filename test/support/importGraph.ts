import { readdirSync, readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, join, resolve } from 'node:path'

/**
 * What may stand between `import` (or `export`) and `from`: a default name, `{ names }`, `* as name`. Nothing else, so
 * that a match never runs on from one statement into the next (`export type A = B` then an import).
 */
const IMPORT = /^\s*import\s+(type\s+)?(?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*\s*as\s+[\w$]+)?\s*from\s+['"]([^'"]+)['"]/.source
const EXPORT = /^\s*export\s+(type\s+)?(?:\{[^}]*\}|\*(?:\s*as\s+[\w$]+)?)\s*from\s+['"]([^'"]+)['"]/.source
const BARE = /^\s*import\s+['"]([^'"]+)['"]/.source
const STATEMENT = new RegExp(`${IMPORT}|${EXPORT}|${BARE}`, 'gm')

/** Each import of a module: its specifier, and whether it is `import type` / `export type` (erased at run time). */
function importStatements(source: string): { spec: string; typeOnly: boolean }[] {
  const out: { spec: string; typeOnly: boolean }[] = []
  for (const m of source.matchAll(STATEMENT)) {
    out.push({ spec: (m[2] ?? m[4] ?? m[5])!, typeOnly: (m[1] ?? m[3]) !== undefined })
  }
  for (const m of source.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push({ spec: m[1]!, typeOnly: false })
  return out
}

/** Specifiers a module loads at run time: value imports, re-exports and dynamic imports (`import type` is erased). */
const valueImports = (source: string) =>
  importStatements(source)
    .filter((i) => !i.typeOnly)
    .map((i) => i.spec)

export type ImportGraph = { modules: Set<string>; packages: Map<string, string> }

/** Every module reachable at run time from `entry` through relative imports, and the packages they load (with who loads each). */
export function importGraph(entry: string): ImportGraph {
  const modules = new Set<string>()
  const packages = new Map<string, string>()
  const visit = (file: string) => {
    if (modules.has(file)) return
    modules.add(file)
    for (const spec of valueImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec))
      else packages.set(spec, file)
    }
  }
  visit(entry)
  return { modules, packages }
}

/**
 * Packages that exist only in Node: its built-ins, and the few dependencies that need them (prom-client: node:cluster,
 * process metrics; pg: node:net).
 */
export const isNodeOnly = (specifier: string) =>
  specifier.startsWith('node:') ||
  builtinModules.includes(specifier.split('/')[0]!) ||
  ['classic-level', 'fake-indexeddb', 'tsx', 'ws', 'prom-client', 'pg'].includes(specifier)

/** `module: package` for every Node-only package reachable from `entry`. */
export function nodeOnlyImports(entry: string): string[] {
  return [...importGraph(entry).packages].filter(([spec]) => isNodeOnly(spec)).map(([spec, file]) => `${file}: ${spec}`)
}

/** The TypeScript modules under `dir`, recursively (declaration files aside). */
export function modulesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => join(dir, f))
}

/**
 * The import circles among the modules under `dirs`: files that import each other in a loop, type-only imports
 * included (a circle of types still ties two modules that should stand one above the other). Each circle is its
 * files, sorted; `modules` says how many modules were read.
 */
export function importCircles(dirs: string[]): { modules: number; circles: string[][] } {
  const files = dirs.flatMap(modulesUnder)
  const edges = new Map(files.map((file): [string, string[]] => [file, []]))
  for (const { from, to } of importEdges(dirs)) if (to !== undefined && edges.has(to)) edges.get(from)!.push(to)
  // Tarjan's strongly connected components: each component of more than one module (or a module importing itself) is a circle.
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const circles: string[][] = []
  const visit = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of edges.get(v)!) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    for (let w = stack.pop()!; ; w = stack.pop()!) {
      onStack.delete(w)
      component.push(w)
      if (w === v) break
    }
    if (component.length > 1 || edges.get(v)!.includes(v)) circles.push(component.sort())
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return { modules: files.length, circles }
}

/** One import of a module of `dirs`: to another module (resolved) or to a package, and whether only for types. */
export type ImportEdge = { from: string; typeOnly: boolean } & ({ to: string; spec?: never } | { spec: string; to?: never })

/** Every import of every module under `dirs`, type-only ones included and marked. */
export function importEdges(dirs: string[]): ImportEdge[] {
  return dirs
    .flatMap(modulesUnder)
    .flatMap((from) =>
      importStatements(readFileSync(from, 'utf8')).map(
        ({ spec, typeOnly }): ImportEdge => (spec.startsWith('.') ? { from, typeOnly, to: resolve(dirname(from), spec) } : { from, typeOnly, spec }),
      ),
    )
}
