import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, nodeOnlyImports } from '../../support/importGraph.ts'

const root = resolve(import.meta.dirname, '../../..')

test('src/metrics/ is Node only: the registry imports prom-client (which the walker counts as Node-only)', () => {
  expect([...importGraph(resolve(root, 'src/metrics/registry.ts')).packages.keys()]).toContain('prom-client')
  expect(nodeOnlyImports(resolve(root, 'src/metrics/registry.ts')).some((line) => line.endsWith(': prom-client'))).toBe(true)
})

// What a page loads, the node itself, and the light `sluice` package's command (bundled with Node's modules only).
test.each(['worker/node.worker.ts', 'worker/browser.ts', 'worker/sw.ts', 'src/node/createNode.ts', 'src/host/hostNode.ts', 'src/cli/lightMain.ts'])(
  'no module of src/metrics/ and no prom-client is reachable from %s',
  (file) => {
    const { modules, packages } = importGraph(resolve(root, file))
    expect([...modules].filter((m) => m.includes('/src/metrics/'))).toEqual([])
    expect(packages.has('prom-client')).toBe(false)
  },
)
