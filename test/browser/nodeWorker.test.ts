// The node's worker (worker/node.worker.ts, which imports worker/nodeWorkerMain.ts) in a real Chromium: a whole node on anvil with IndexedDB, reached by
// the page's fetch('/api/v1/...') through the real service worker and the request channel.
import * as Comlink from 'comlink'
import { createTestClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import { storageName } from '../../src/storage/identity.ts'
import type { NodeWorkerApi } from '../../worker/nodeWorkerMain.ts'
import { carryErrorCodes } from '../../worker/comlinkErrors.ts'
import { deleteDatabase } from './support/indexedDb.ts'
import { ensureControlled } from './support/serviceWorker.ts'

/** How soon a start whose database is taken away must end (it ends as the database goes; the rest is a busy machine). */
const START_ENDS_WITHIN_MS = 5_000

const workers: Worker[] = []

beforeAll(async () => {
  await ensureControlled()
  carryErrorCodes()
}, 30_000)
afterAll(async () => {
  for (const w of workers) w.terminate()
})

function spawn(): Comlink.Remote<NodeWorkerApi> {
  const worker = new Worker(new URL('../../worker/node.worker.ts', import.meta.url), { type: 'module' })
  workers.push(worker)
  return Comlink.wrap<NodeWorkerApi>(worker)
}

test("the page's fetch('/api/v1/...') reaches the node in its worker, from the first sync on; after stop it is a clear 503", async () => {
  const rpc = inject('rpcUrl')
  const deployment = inject('deployment')
  const key = generatePrivateKey()
  await createTestClient({ mode: 'anvil', transport: http(rpc) }).setBalance({ address: privateKeyToAddress(key), value: parseEther('1') })
  const node = spawn()
  const started = await node.start({ rpc, deployment, key, confirmations: 0, pollingInterval: 50, environment: 'development' })
  expect(started.address).toBe(privateKeyToAddress(key))
  // A second start of the same worker is refused with its code, across Comlink.
  await expect(node.start({ rpc, deployment, key })).rejects.toMatchObject({ code: 'NODE_ALREADY_STARTED' })

  await expect.poll(async () => (await (await fetch('/api/v1/status')).json()).status, { timeout: 20_000 }).toBe('ready')
  expect(await (await fetch('/api/v1/address')).json()).toEqual({ our_address: started.address })
  const channels = await fetch('/api/v1/channels')
  expect(channels.status).toBe(200)
  expect(await channels.json()).toEqual([])
  // Bad input gets the API's own 4xx with its code, through the service worker.
  const bad = await fetch(`/api/v1/payments/${deployment.tokens.TTT}/${started.address.toLowerCase()}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"amount": "1"}',
  })
  expect(bad.status).toBe(404)
  expect(await bad.json()).toMatchObject({ code: 'NOT_FOUND' })
  // A body that is not JSON is 415 in the page too, before any route: a string (text/plain), a form, bytes with no type.
  for (const body of ['{"amount": "1"}', new URLSearchParams({ amount: '1' }), new Blob(['{"amount": "1"}'])]) {
    const refused = await fetch('/api/v1/shutdown', { method: 'POST', body })
    expect(refused.status).toBe(415)
    expect(await refused.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE' })
  }
  expect(await (await fetch('/api/v1/status')).json()).toEqual({ status: 'ready' })

  await node.stop()
  const after = await fetch('/api/v1/address')
  expect(after.status).toBe(503)
  expect(await after.json()).toMatchObject({ code: 'NO_NODE' })
}, 60_000)

test('its database taken away while the start still waits for the chain ends the start at once with why; nothing thrown in the worker, which can start again', async () => {
  const rpc = inject('rpcUrl')
  const deployment = inject('deployment')
  const key = generatePrivateKey()
  const address = privateKeyToAddress(key)
  const worker = new Worker(new URL('../../worker/node.worker.ts', import.meta.url), { type: 'module' })
  workers.push(worker)
  // What the worker threw to no one (an uncaught exception reaches the page as the worker's `error` event).
  const uncaught: string[] = []
  worker.addEventListener('error', (event) => {
    uncaught.push(event.message)
    event.preventDefault()
  })
  const node = Comlink.wrap<NodeWorkerApi>(worker)
  // The page's provider: to anvil, except the eth_blockNumber an empty store with a backup server asks once the store
  // is open (for its restore), which it holds until the test lets it go.
  const anvil = http(rpc)({})
  let asked!: () => void
  const heldAsked = new Promise<void>((resolve) => (asked = resolve))
  let letGo!: (error: Error) => void
  const held = new Promise<never>((_, reject) => (letGo = reject))
  held.catch(() => {})
  const provider = {
    request: (args: { method: string; params?: unknown }) => {
      if (args.method !== 'eth_blockNumber') return anvil.request(args as never)
      asked()
      return held
    },
  }
  const starting = node.start(
    { deployment, key, backupUrl: 'http://127.0.0.1:9/backup/v1', confirmations: 0, pollingInterval: 50 },
    undefined,
    Comlink.proxy(provider),
  )
  const outcome = starting.then(
    () => ({ code: 'STARTED', message: '' }),
    (e: { code: string; message: string }) => ({ code: e.code, message: e.message }),
  )
  await heldAsked
  await deleteDatabase(storageName({ chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address }))
  const ended = await Promise.race([outcome, new Promise<undefined>((resolve) => setTimeout(resolve, START_ENDS_WITHIN_MS))])
  // The call it waited for fails now: what createNode goes on with must not throw anywhere either.
  letGo(new Error('the wallet refused'))
  await outcome

  expect(uncaught).toEqual([])
  expect(ended).toMatchObject({ code: 'NODE_STOPPED', message: expect.stringMatching(/database was taken away/) })
  // Nothing of that start holds the store: the same worker starts the node again, on a fresh store.
  const again = await node.start({ rpc, deployment, key, confirmations: 0, pollingInterval: 50, apiChannel: `sluice-api-${crypto.randomUUID()}` })
  expect(again.address).toBe(address)
  await expect.poll(() => node.status().then((s) => s?.status), { timeout: 20_000 }).toBe('ready')
  await node.stop()
  expect(uncaught).toEqual([])
}, 60_000)
