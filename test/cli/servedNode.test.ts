import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { serveNode } from '../../src/cli/servedNode.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createApiNode } from '../api/support/apiNet.ts'
import { startDevnet, type Devnet } from '../integration/support/devnet.ts'

let net: Devnet
beforeAll(async () => {
  net = await startDevnet([])
})
afterAll(() => net?.stop())

const create = (key: Hex) => createApiNode(net, key)

const refused = (url: string) =>
  fetch(url).then(
    () => false,
    () => true,
  )

describe('serveNode (what sluice serve and sluice devnet run)', () => {
  test('a request that fails with a bug answers 500, asks the owner to stop, and the API answers 503 from then on', async () => {
    const served = await serveNode({ node: await create(anvilKeys[3]), version: '0.1.0', host: '127.0.0.1', port: 0, environment: 'development' })
    // Fault injection: one more route on the real app, whose handler has a bug.
    served.api.app.get('/bug', () => {
      throw new TypeError('a bug')
    })
    await served.run()
    const r = await fetch(`${served.apiUrl}/bug`)
    expect(r.status).toBe(500)
    expect(await r.json()).toEqual({ errors: 'internal error: a bug', code: 'INTERNAL' })
    expect(await served.stopRequested).toEqual({ reason: 'internal error', error: expect.any(TypeError) })
    expect((await fetch(`${served.apiUrl}/address`)).status).toBe(503)
    await served.stop()
    expect(served.node.status.status).toBe('stopped')
    expect(await refused(`${served.apiUrl}/status`)).toBe(true)
  })

  test('POST /shutdown resolves stopRequested with shutdown; stop() is idempotent', async () => {
    const served = await serveNode({ node: await create(anvilKeys[4]), version: '0.1.0', host: '127.0.0.1', port: 0, environment: 'production' })
    await served.run()
    expect((await fetch(`${served.apiUrl}/shutdown`, { method: 'POST' })).status).toBe(200)
    expect(await served.stopRequested).toEqual({ reason: 'shutdown' })
    await Promise.all([served.stop(), served.stop()])
    expect(served.node.status.status).toBe('stopped')
  })

  test('stopping during the first sync ends it: the node never turns ready nor watches the chain afterwards', async () => {
    const served = await serveNode({ node: await create(anvilKeys[5]), version: '0.1.0', host: '127.0.0.1', port: 0, environment: 'development' })
    const statuses: string[] = []
    served.node.notices.subscribe((n) => {
      if (n.type === 'status') statuses.push(n.status.status)
    })
    void served.run()
    await served.stop()
    expect(statuses).toEqual(['stopped'])
    expect(served.node.status.status).toBe('stopped')
    // Nothing is left running: no status change and no error arrives later.
    await new Promise((r) => setTimeout(r, 300))
    expect(statuses).toEqual(['stopped'])
  })
})
