// The page's node restored from a stale backup (docs/decisions/0029): when its partner closes the channel with a newer
// proof of ours, the node stops with STALE_STATE (onStopped hears it, /api/v1 answers 503), and startNode() refuses
// to run on that state again.
import { createTestClient, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { commands } from 'vitest/browser'
import { storageName } from '../../src/storage/identity.ts'
import { importState, startNode, type NodeStopped, type SluiceBrowserNode } from '../../worker/host.ts'
import type { Peer } from './commands/peers.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { deployTestToken } from './support/token.ts'
import { eventually } from '../integration/support/eventually.ts'
import { deleteDatabase } from './support/indexedDb.ts'
import { api } from './support/api.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')
const key = generatePrivateKey()
const address = privateKeyToAddress(key)
let hub: Peer
let relay: string
let token: Address
let node: SluiceBrowserNode | undefined

beforeAll(async () => {
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('10') })
  const [world, deployed] = await Promise.all([commands.startPeers(rpc, deployment, 1), deployTestToken(rpc, deployment, key, 1000n)])
  hub = world.peers[0]!
  relay = world.relay
  token = deployed.token
}, 120_000)

afterAll(async () => {
  await node?.stop()
  await commands.stopPeers()
})

describe('the page restored from a stale backup', () => {
  test('stops with STALE_STATE when the partner closes with a newer proof of ours, and does not start on that state again', async () => {
    node = await startNode(nodeOptions({ key, relay: [relay] }))
    const opened = await api('PUT', '/channels', { token_address: token, partner_address: hub.address, total_deposit: '100' })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
    // The payment goes once the hub has seen the channel (through the relay); it is the backup's last.
    await eventually(async () => expect((await api('POST', `/payments/${token}/${hub.address}`, { amount: '5', identifier: '1' })).status).toBe(200), 30_000)
    const backup = await node.exportState()
    expect((await api('POST', `/payments/${token}/${hub.address}`, { amount: '3', identifier: '2' })).status).toBe(200)
    await eventually(async () => {
      const received = (await commands.peerRequest(hub.api, 'GET', `/payments/${token}/${address}`)).body as { identifier: string }[]
      expect(received.map((p) => p.identifier)).toEqual(['1', '2'])
    }, 20_000)
    await node.stop()

    // The database is lost; the owner restores the backup, older than what the node signed since.
    await deleteDatabase(storageName({ chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address }))
    importState(backup)
    node = await startNode(nodeOptions({ key, relay: [relay] }))
    const stopped = new Promise<NodeStopped>((resolve) => node!.onStopped(resolve))
    expect((await api('GET', `/channels/${token}/${hub.address}`)).body).toMatchObject({ balance: '95' })

    // The hub closes with the newest proof of ours it holds.
    const closed = await commands.peerRequest(hub.api, 'PATCH', `/channels/${token}/${address}`, { state: 'closed' })
    expect(closed.status, JSON.stringify(closed.body)).toBe(200)
    const why = await stopped
    expect(why.error).toMatchObject({ code: 'STALE_STATE', message: expect.stringMatching(/older than what it signed/) })
    const answer = await api('GET', '/address')
    expect(answer).toMatchObject({ status: 503, body: { code: 'NODE_STOPPED', errors: expect.stringMatching(/older than what it signed/) } })
    await node.stop()
    node = undefined

    // The state it stopped on is stale, durably: the next start refuses it.
    await expect(startNode(nodeOptions({ key, relay: [relay] }))).rejects.toMatchObject({ code: 'STALE_STATE' })
  }, 120_000)
})
