import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, nodeOnlyImports } from '../../support/importGraph.ts'

const root = resolve(import.meta.dirname, '../../../src/transport')

test.each(['broadcastChannelTransport.ts', 'delivery.ts', 'lineSigner.ts'])('nothing %s loads imports a Node built-in (it runs in browser workers)', (entry) => {
  expect(importGraph(resolve(root, entry)).modules.size).toBeGreaterThan(1)
  expect(nodeOnlyImports(resolve(root, entry))).toEqual([])
})
