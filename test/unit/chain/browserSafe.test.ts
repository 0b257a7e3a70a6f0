import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, nodeOnlyImports } from '../../support/importGraph.ts'

const entry = resolve(import.meta.dirname, '../../../src/chain/index.ts')

test('nothing src/chain loads reaches a Node-only module', () => {
  const { modules } = importGraph(entry)
  expect(modules.size).toBeGreaterThan(10)
  expect(nodeOnlyImports(entry)).toEqual([])
  // And nothing of the devnet (spawns anvil, writes files) is among the modules.
  expect([...modules].filter((f) => f.includes('/src/devnet/'))).toEqual([])
})
