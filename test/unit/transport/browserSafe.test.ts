import { readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src/transport')
const builtins = new Set(builtinModules)

/** Every module reachable from `entry` through relative imports, with the bare specifiers each one imports. */
function reachable(entry: string): Map<string, string[]> {
  const seen = new Map<string, string[]>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    const source = readFileSync(file, 'utf8')
    const specifiers = [...source.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!)
    seen.set(file, specifiers.filter((s) => !s.startsWith('.')))
    for (const s of specifiers) if (s.startsWith('.')) visit(resolve(dirname(file), s))
  }
  visit(entry)
  return seen
}

test('nothing reachable from src/transport imports a Node built-in (it runs in browser workers)', () => {
  for (const entry of ['broadcastChannelTransport.ts', 'delivery.ts', 'lineSigner.ts']) {
    const graph = reachable(resolve(root, entry))
    expect(graph.size).toBeGreaterThan(1)
    const offenders = [...graph].flatMap(([file, bare]) => bare.filter((s) => s.startsWith('node:') || builtins.has(s.split('/')[0]!)).map((s) => `${file}: ${s}`))
    expect(offenders).toEqual([])
  }
})
