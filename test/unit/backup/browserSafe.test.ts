import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, isNodeOnly, nodeOnlyImports } from '../../support/importGraph.ts'

const backupDir = resolve(import.meta.dirname, '../../../src/backup')

test('the envelope, its crypto and the client calls (src/backup/index.ts) reach no Node-only module: the page loads them', () => {
  expect(nodeOnlyImports(resolve(backupDir, 'index.ts'))).toEqual([])
  expect([...importGraph(resolve(backupDir, 'index.ts')).modules].filter((m) => m.includes('/server/'))).toEqual([])
})

test("the server's store is the backup module that imports classic-level", () => {
  const packages = [...importGraph(resolve(backupDir, 'server/store.ts')).packages.keys()]
  expect(packages.filter(isNodeOnly)).toEqual(['classic-level'])
})
