// The node's worker (worker/node.worker.ts) in a real Chromium: a whole node on anvil with IndexedDB, reached by
// the page's fetch('/api/v1/...') through the real service worker and the request channel.
import * as Comlink from 'comlink'
import { createTestClient, http, parseEther } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, expect, inject, test } from 'vitest'
import type { NodeWorkerApi } from '../../worker/node.worker.ts'
import { carryErrorCodes } from '../../worker/comlinkErrors.ts'
import { ensureControlled } from './support/serviceWorker.ts'

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
