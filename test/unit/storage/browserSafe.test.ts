import { readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'

const storageDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src/storage')

/** Every bare specifier reachable from `entry` through relative imports (static and type-only alike). */
function bareImports(entry: string, seen = new Set<string>(), found = new Map<string, string>()): Map<string, string> {
  if (seen.has(entry)) return found
  seen.add(entry)
  const source = readFileSync(entry, 'utf8')
  for (const [, specifier] of source.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)) {
    if (specifier!.startsWith('.')) bareImports(resolve(dirname(entry), specifier!), seen, found)
    else found.set(specifier!, entry)
  }
  return found
}

const nodeOnly = (specifier: string) => specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]!) || specifier === 'classic-level'

test.each(['idbStorage.ts', 'memoryStorage.ts', 'dump.ts', 'json.ts', 'storage.ts'])('%s reaches no Node-only module (it runs in the browser)', (file) => {
  const imports = bareImports(resolve(storageDir, file))
  expect([...imports].filter(([specifier]) => nodeOnly(specifier))).toEqual([])
  if (file === 'idbStorage.ts') expect([...imports.keys()]).toContain('idb')
})

test('levelStorage.ts is the storage module that imports classic-level and node:*', () => {
  const imports = bareImports(resolve(storageDir, 'levelStorage.ts'))
  expect([...imports.keys()].filter(nodeOnly).sort()).toEqual(['classic-level', 'node:path', 'node:v8'])
})
