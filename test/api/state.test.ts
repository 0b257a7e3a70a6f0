import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createNode } from '../../src/node/createNode.ts'
import { jsonParse } from '../../src/storage/json.ts'
import { openLevelStorage } from '../../src/storage/levelStorage.ts'
import { openMemoryStorage } from '../../src/storage/memoryStorage.ts'
import type { StorageDump } from '../../src/storage/storage.ts'
import { stateDumpSchema } from '../../src/api/routes/state.ts'
import { expectAnswer } from './support/answers.ts'
import { createBroadcastChannelTransport } from '../../src/transport/broadcastChannelTransport.ts'
import { serveNode, startApiNet, type ApiNet, createApiNode } from './support/apiNet.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import { isDotSegment } from './support/fuzz.ts'

let net: ApiNet
beforeAll(async () => {
  net = await startApiNet({ nodes: 2, node: { durable: true } })
})
afterAll(() => net?.stopAll())

const plain = (value: unknown) => JSON.parse(JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)))

describe('GET /_state/export', () => {
  it('is a dump of the whole store that restores the same node: channels, balance proofs and payment history', async () => {
    const [a, b] = net.nodes as [(typeof net.nodes)[0], (typeof net.nodes)[0]]
    await openChannelOnChain(a.node.client, { tokenNetwork: net.tokenNetwork, partner: b.node.address, totalDeposit: 300n })
    await sendPayment(a.node.client, { token: net.token, target: b.node.address, amount: 25n, identifier: 77n })

    const r = await a.request('GET', '/_state/export')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toMatch(/^application\/json/)
    expect(r.headers.get('content-disposition')).toMatch(
      new RegExp(`^attachment; filename="sluice-state-31337-${a.node.address.toLowerCase()}-block\\d+\\.json"$`),
    )
    // The envelope is what openapi.json documents, with every record the store holds (a snapshot, proofs, locks).
    const documented = expectAnswer(stateDumpSchema, JSON.parse(r.text))
    expect(documented.payments.length).toBeGreaterThan(0)
    const dump = jsonParse(r.text) as StorageDump
    expect(dump.format).toBe('sluice-dump')
    expect(dump.meta).toMatchObject({ chainId: 31337n, address: a.node.address, registry: net.deployment.contracts.TokenNetworkRegistry.address })
    expect(typeof dump.meta.syncedBlock).toBe('bigint')

    // Restore into a fresh store and start a node from it (on its own transport channel: `a` still runs).
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-restore-'))
    const identity = { chainId: 31337n, registry: net.deployment.contracts.TokenNetworkRegistry.address, address: a.node.address }
    const restored = await createNode({
      rpc: net.anvil.rpcUrl,
      deployment: net.deployment,
      key: anvilKeys[1]!,
      storage: (id) => openLevelStorage(id, { dataDir }),
      transport: ({ address }) => createBroadcastChannelTransport({ address, channelName: `${net.channelName}-restored` }),
      confirmations: 0,
      pollingInterval: 50,
      import: dump,
    })
    await restored.run()
    try {
      expect(plain(restored.state.channels)).toEqual(plain(a.node.state.channels))
      expect(plain(restored.state.initiators)).toEqual(plain(a.node.state.initiators))
      const history = await restored.client.store.payments({})
      expect(plain(history)).toEqual(plain(await a.node.client.store.payments({})))
      expect(history.some((p) => p.identifier === 77n && p.amount === 25n && p.event === 'EventPaymentSentSuccess')).toBe(true)
    } finally {
      await restored.stop()
    }

    // The store refuses the dump for another node's identity.
    const other = await openMemoryStorage({ ...identity, address: b.node.address })
    await expect(other.importDump(dump)).rejects.toMatchObject({ name: 'DumpRejectedError' })
    await other.close()
  })

  it('is 503 while the node syncs', async () => {
    const node = await createApiNode(net, anvilKeys[8]!)
    const served = await serveNode(node)
    try {
      const r = await served.get('/_state/export')
      expect(r.status).toBe(503)
      expect(typeof r.body.errors).toBe('string')
    } finally {
      await served.server.close(100)
      await node.stop()
    }
  })

  it('other methods are 405 with Allow: GET, and there is no import endpoint (import is `sluice serve --import`)', async () => {
    const a = net.nodes[0]!
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await a.request(method, '/_state/export', { format: 'sluice-dump' })
      expect(r.status, method).toBe(405)
      expect(r.headers.get('allow')).toBe('GET')
    }
    for (const path of ['/_state/import', '/_state']) expect((await a.request('POST', path, {})).status, path).toBe(404)
  })

  it('fuzz: paths under /_state and query strings never give a 500 nor change the state', async () => {
    const a = net.nodes[0]!
    const before = plain(a.node.state.channels)
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 20 }).filter((s) => !isDotSegment(s)),
        fc.string({ maxLength: 20 }),
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE'),
        async (segment, query, method) => {
          const r = await a.request(method, `/_state/${encodeURIComponent(segment)}?${encodeURIComponent(query)}`)
          expect([200, 404, 405], `${method} ${segment} ${query}`).toContain(r.status)
          if (r.status !== 200) expect(typeof r.body.errors).toBe('string')
        },
      ),
      { numRuns: 40 },
    )
    expect(plain(a.node.state.channels)).toEqual(before)
    expect(a.internalErrors).toEqual([])
  })
})
