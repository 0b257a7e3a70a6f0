import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

/** Specifiers of the value imports and re-exports of a module (`import type` is erased and never loads). */
function valueImports(source: string): string[] {
  const out: string[] = []
  for (const m of source.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm)) {
    if (m[2]) continue
    out.push((m[3] ?? m[4])!)
  }
  for (const m of source.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]!)
  return out
}

test('nothing src/chain loads reaches a Node-only module', () => {
  const seen = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const spec of valueImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) visit(join(dirname(file), spec))
      else packages.add(spec)
    }
  }
  visit(join(root, 'src/chain/index.ts'))
  expect(seen.size).toBeGreaterThan(10)
  const nodeOnly = [...packages].filter((p) => p.startsWith('node:') || ['fs', 'path', 'child_process', 'net', 'crypto', 'os', 'classic-level', 'fake-indexeddb'].includes(p))
  expect(nodeOnly).toEqual([])
  // And nothing of the devnet (spawns anvil, writes files) is among the modules.
  expect([...seen].filter((f) => f.includes('/src/devnet/'))).toEqual([])
})
