import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, nodeOnlyImports } from '../../support/importGraph.ts'

const root = resolve(import.meta.dirname, '../../..')

test.each(['src/node/createNode.ts', 'src/host/hostNode.ts', 'worker/node.worker.ts', 'test/browser/fixtures/nodeWorker.ts'])(
  'no Node-only module is reachable from %s (what a browser worker loads)',
  (file) => {
    const { modules } = importGraph(resolve(root, file))
    expect(modules.size).toBeGreaterThan(30)
    expect(nodeOnlyImports(resolve(root, file))).toEqual([])
  },
)
