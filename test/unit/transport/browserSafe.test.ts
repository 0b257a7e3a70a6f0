import { resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importGraph, nodeOnlyImports } from '../../support/importGraph.ts'

const root = resolve(import.meta.dirname, '../../../src/transport')

test.each(['broadcastChannelTransport.ts', 'delivery.ts', 'lineSigner.ts', 'libp2p/libp2pTransport.ts'])(
  'nothing %s loads imports a Node built-in (it runs in browser workers)',
  (entry) => {
    expect(importGraph(resolve(root, entry)).modules.size).toBeGreaterThan(1)
    expect(nodeOnlyImports(resolve(root, entry))).toEqual([])
  },
)

test('the libp2p adapter loads the libp2p packages, and not `ws` (only nodePolyfills.ts, which browsers never load, does)', () => {
  const { packages } = importGraph(resolve(root, 'libp2p/libp2pTransport.ts'))
  expect([...packages.keys()]).toEqual(expect.arrayContaining(['libp2p', '@libp2p/websockets', '@libp2p/circuit-relay-v2', '@libp2p/gossipsub']))
  expect(packages.has('ws')).toBe(false)
  expect(nodeOnlyImports(resolve(root, 'libp2p/nodePolyfills.ts'))).toEqual([expect.stringMatching(/nodePolyfills\.ts: ws$/)])
})
