// startNode() in a real Chromium: the service worker, the leader lock, the node's worker on anvil, the proxy over
// the request channel, and the key kept in IndexedDB.
import { createTestClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterEach, beforeAll, describe, expect, inject, test } from 'vitest'
import { decryptKeystore } from '../../src/chain/keystore.ts'
import { version } from '../../src/version.ts'
import { startNode, type SluiceBrowserNode, type StartNodeOptions } from '../../worker/host.ts'
import type { PushEvent } from '../../worker/subscription.ts'
import { SERVICE_WORKER_URL } from './support/serviceWorker.ts'

const rpc = inject('rpcUrl')
const deployment = inject('deployment')
const started: SluiceBrowserNode[] = []

function options(extra: Partial<StartNodeOptions> = {}): StartNodeOptions {
  return {
    rpc,
    deployment,
    confirmations: 0,
    pollingInterval: 50,
    environment: 'development',
    serviceWorkerUrl: SERVICE_WORKER_URL,
    serviceWorkerType: 'module',
    workerUrl: new URL('../../worker/node.worker.ts', import.meta.url),
    ...extra,
  }
}

async function start(extra: Partial<StartNodeOptions> = {}): Promise<SluiceBrowserNode> {
  const node = await startNode(options(extra))
  started.push(node)
  return node
}

async function fund(address: `0x${string}`) {
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address, value: parseEther('1') })
}

async function deleteDatabase(name: string) {
  await new Promise<void>((resolve, reject) => {
    const request = indexedDB.deleteDatabase(name)
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error)
  })
}

beforeAll(async () => {
  await deleteDatabase('sluice:keys')
})
afterEach(async () => {
  for (const node of started.splice(0)) await node.stop()
})

describe('startNode', () => {
  test('resolves once fetch reaches the node through the service worker; the proxy has the REST operations; stop is a clear 503', async () => {
    const key = generatePrivateKey()
    await fund(privateKeyToAddress(key))
    const pending = startNode(options({ key }))
    // A second start during the first joins it: one node, one identity.
    const joined = startNode(options({ key: generatePrivateKey() }))
    const node = await pending
    started.push(node)
    expect(await joined).toBe(node)
    expect(node.leader).toBe(true)
    expect(typeof node.storagePersisted).toBe('boolean')

    expect(await (await fetch('/api/v1/address')).json()).toEqual({ our_address: privateKeyToAddress(key) })
    expect(await node.address()).toEqual({ our_address: privateKeyToAddress(key) })
    expect(await node.version()).toEqual({ version })
    await expect.poll(async () => (await node.status()).status, { timeout: 20_000 }).toBe('ready')
    expect(await node.channels()).toEqual([])
    // An error answer keeps its status and code through the proxy.
    await expect(node.channel(deployment.tokens.TTT!, privateKeyToAddress(key))).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' })

    const events: PushEvent[] = []
    const unsubscribe = node.subscribe((e) => events.push(e))
    await expect.poll(() => events.map((e) => e.event), { timeout: 10_000 }).toContain('status')
    unsubscribe()

    await node.stop()
    started.length = 0
    const after = await fetch('/api/v1/address')
    expect(after.status).toBe(503)
    expect(await after.json()).toMatchObject({ code: 'NO_NODE' })
  }, 60_000)

  test('without a key, it generates one on the first start, keeps it as a v3 keystore, and uses it again on the next', async () => {
    const first = await start()
    const { our_address } = await first.address()
    const keystore = await first.exportKeystore()
    expect(keystore).toBeDefined()
    expect(privateKeyToAddress(await decryptKeystore(keystore, ''))).toBe(our_address)
    await first.stop()
    started.length = 0

    const again = await start()
    expect((await again.address()).our_address).toBe(our_address)
  }, 60_000)
})
