import { readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, resolve } from 'node:path'

/** Specifiers a module loads at run time: value imports, re-exports and dynamic imports (`import type` is erased). */
function valueImports(source: string): string[] {
  const out: string[] = []
  for (const m of source.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm)) {
    if (!m[2]) out.push((m[3] ?? m[4])!)
  }
  for (const m of source.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]!)
  return out
}

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

/** Packages that exist only in Node: its built-ins, and the few dependencies that need them. */
export const isNodeOnly = (specifier: string) =>
  specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]!) || ['classic-level', 'fake-indexeddb', 'tsx', 'ws'].includes(specifier)

/** `module: package` for every Node-only package reachable from `entry`. */
export function nodeOnlyImports(entry: string): string[] {
  return [...importGraph(entry).packages].filter(([spec]) => isNodeOnly(spec)).map(([spec, file]) => `${file}: ${spec}`)
}
