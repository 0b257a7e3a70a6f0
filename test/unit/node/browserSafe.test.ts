import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, nodeOnlyImports } from '../../support/importGraph.ts'

const root = resolve(import.meta.dirname, '../../..')

// With at least how many modules each graph must be found (so a walker that stops early cannot pass).
test.each([
  ['src/node/createNode.ts', 30],
  ['src/host/hostNode.ts', 30],
  ['worker/node.worker.ts', 30],
  ['worker/browser.ts', 10],
  ['worker/sw.ts', 3],
  ['test/browser/fixtures/nodeWorker.ts', 30],
  // The logger every host uses, the CLI's and the page's worker alike.
  ['src/log/logger.ts', 3],
] as const)('no Node-only module is reachable from %s (what a browser worker or page loads)', (file, atLeast) => {
  const { modules } = importGraph(resolve(root, file))
  expect(modules.size).toBeGreaterThanOrEqual(atLeast)
  expect(nodeOnlyImports(resolve(root, file))).toEqual([])
})
