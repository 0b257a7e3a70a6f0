import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, isNodeOnly, nodeOnlyImports } from '../../support/importGraph.ts'

const storageDir = resolve(import.meta.dirname, '../../../src/storage')

test.each(['idbStorage.ts', 'memoryStorage.ts', 'dump.ts', 'json.ts', 'storage.ts'])('%s reaches no Node-only module (it runs in the browser)', (file) => {
  expect(nodeOnlyImports(resolve(storageDir, file))).toEqual([])
  if (file === 'idbStorage.ts') expect([...importGraph(resolve(storageDir, file)).packages.keys()]).toContain('idb')
})

test('levelStorage.ts is the storage module that imports classic-level and node:*', () => {
  const packages = [...importGraph(resolve(storageDir, 'levelStorage.ts')).packages.keys()]
  expect(packages.filter(isNodeOnly).sort()).toEqual(['classic-level', 'node:path', 'node:v8'])
})
