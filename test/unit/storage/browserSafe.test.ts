import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, isNodeOnly, nodeOnlyImports } from '../../support/importGraph.ts'

const storageDir = resolve(import.meta.dirname, '../../../src/storage')

test.each(['idbStorage.ts', 'memoryStorage.ts', 'dump.ts', 'json.ts', 'storage.ts'])('%s reaches no Node-only module (it runs in the browser)', (file) => {
  expect(nodeOnlyImports(resolve(storageDir, file))).toEqual([])
  if (file === 'idbStorage.ts') expect([...importGraph(resolve(storageDir, file)).packages.keys()]).toContain('idb')
})

test.each([
  ['levelStorage.ts', ['classic-level', 'node:path', 'node:v8']],
  ['serviceLevelStore.ts', ['classic-level', 'node:v8']],
  ['pgStorage.ts', ['node:crypto', 'node:os', 'pg']],
])("%s is a storage module that imports Node-only packages (a node's LevelDB, the services', PostgreSQL)", (file, nodeOnly) => {
  const packages = [...importGraph(resolve(storageDir, file)).packages.keys()]
  expect(packages.filter(isNodeOnly).sort()).toEqual(nodeOnly)
})
