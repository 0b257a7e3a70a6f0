// The page's node and the off-browser backup (docs/decisions/0034), with a real `sluice backup-server` process and a
// headless peer over libp2p: the node pushes sealed copies as it pays (GET /settings shows them); its IndexedDB is
// deleted (as Safari does after 7 days); startNode() with the same key restores the newest copy, which lags behind
// what the node signed, asks the peer for the latest state, and pays again.
import { createTestClient, http, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { commands } from 'vitest/browser'
import { storageName } from '../../src/storage/identity.ts'
import { startNode, type SluiceBrowserNode } from '../../worker/host.ts'
import { eventually } from '../integration/support/eventually.ts'
import type { Peer } from './commands/peers.ts'
import { api } from './support/api.ts'
import { deleteDatabase } from './support/indexedDb.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { deployTestToken } from './support/token.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')
const key = generatePrivateKey()
const address = privateKeyToAddress(key)
let hub: Peer
let relay: string
let token: Address
let backupUrl: string
let node: SluiceBrowserNode | undefined

beforeAll(async () => {
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('10') })
  const [world, deployed, url] = await Promise.all([
    commands.startPeers(rpc, deployment, 1),
    deployTestToken(rpc, deployment, key, 1000n),
    commands.startBackupServer(),
  ])
  hub = world.peers[0]!
  relay = world.relay
  token = deployed.token
  backupUrl = url
}, 120_000)

afterAll(async () => {
  await node?.stop()
  await Promise.all([commands.stopPeers(), commands.stopBackupServers()])
})

const settings = async () => (await api('GET', '/settings')).body.backup

describe('the page with a backup server', () => {
  test('pushes copies as it pays; its IndexedDB deleted, it restores the newest copy, syncs with its partner and pays again', async () => {
    // Pushes at most every 3 s, and none at the stop: the copy lags behind the last payment, as after a crash.
    const options = nodeOptions({ key, relay: [relay], backupUrl, backup: { minIntervalMs: 3_000, stopTimeoutMs: 0 } })
    node = await startNode(options)
    const opened = await api('PUT', '/channels', { token_address: token, partner_address: hub.address, total_deposit: '100' })
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
    await eventually(async () => expect((await api('POST', `/payments/${token}/${hub.address}`, { amount: '5', identifier: '1' })).status).toBe(200), 30_000)
    // The copy of the state after the first payment reaches the server.
    await eventually(
      async () => expect(await settings()).toMatchObject({ behind: false, last_error: null, last_push: { version: expect.any(String) } }),
      20_000,
    )
    const copied = await settings()
    expect(copied.pushes).toBeGreaterThan(0)
    expect(copied.url).toBe(backupUrl)
    expect((await api('POST', `/payments/${token}/${hub.address}`, { amount: '3', identifier: '2' })).status).toBe(200)
    expect((await settings()).last_push.version).toBe(copied.last_push.version)
    await eventually(async () => {
      const received = (await commands.peerRequest(hub.api, 'GET', `/payments/${token}/${address}`)).body as { identifier: string }[]
      expect(received.map((p) => p.identifier)).toEqual(['1', '2'])
    }, 20_000)
    // The newest copy at the stop: the one after the first payment, unless a busy machine took over 3 s since then
    // and pushed the second too (the channel's sync below then has nothing to bring back, and the balance is the same).
    const newest = (await settings()).last_push.version as string
    await node.stop()

    // The browser deletes the site's storage; the page starts the node again with the same key and the backup server.
    await deleteDatabase(storageName({ chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address }))
    node = await startNode(options)
    // (At least it: a push may still slip in between that read and the stop.)
    expect(BigInt((await settings()).restored.version)).toBeGreaterThanOrEqual(BigInt(newest))
    // The copy held the state after the first payment; the peer's answer brings the second back.
    await eventually(async () => expect((await api('GET', `/channels/${token}/${hub.address}`)).body).toMatchObject({ balance: '92' }), 30_000)
    expect((await api('GET', '/notifications')).body).not.toContainEqual(expect.objectContaining({ id: 'channels_waiting_sync' }))
    expect((await api('POST', `/payments/${token}/${hub.address}`, { amount: '2', identifier: '3' })).status).toBe(200)
    await eventually(async () => {
      const received = (await commands.peerRequest(hub.api, 'GET', `/payments/${token}/${address}`)).body as { identifier: string; amount: string }[]
      expect(received.map((p) => p.identifier)).toEqual(['1', '2', '3'])
    }, 20_000)
    const hubSide = (await commands.peerRequest(hub.api, 'GET', `/channels/${token}/${address}`)).body as { balance: string }
    expect(hubSide.balance).toBe('10')
  }, 180_000)
})
