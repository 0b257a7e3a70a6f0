import * as Comlink from 'comlink'
import { afterEach, expect, test, vi } from 'vitest'
import { channelKeyOf, record, secretRequest, unlock } from '../unit/transport/messages.ts'
import type { OutboxRecord } from '../../src/storage/storage.ts'
import type { DeliveryWorkerApi } from './fixtures/deliveryWorker.ts'

// Anvil's well-known test keys 1 and 2 (never hold value with them).
const KEY_A = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const
const KEY_B = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a' as const

const workers: { worker: Worker; api: Comlink.Remote<DeliveryWorkerApi> }[] = []
afterEach(async () => {
  for (const { worker, api } of workers.splice(0)) {
    // A worker that never loaded would never answer.
    await Promise.race([api.stop(), new Promise((resolve) => setTimeout(resolve, 1000))])
    worker.terminate()
  }
})

function spawn() {
  const worker = new Worker(new URL('./fixtures/deliveryWorker.ts', import.meta.url), { type: 'module' })
  const api = Comlink.wrap<DeliveryWorkerApi>(worker)
  workers.push({ worker, api })
  // A module that cannot load in a worker (a Node-only import, say) fails here instead of hanging the test.
  const failed = new Promise<never>((_, reject) =>
    worker.addEventListener('error', (e) => reject(new Error(`worker failed: ${e.message || 'could not load'}`))),
  )
  failed.catch(() => {})
  return {
    start: (...args: Parameters<DeliveryWorkerApi['start']>) => Promise.race([api.start(...args), failed]),
    put: (records: OutboxRecord[]) => api.put(records),
    state: () => api.state(),
  }
}

test('two module workers exchange messages over BroadcastChannel, acknowledged end to end', async () => {
  const channelName = `sluice-browser-${crypto.randomUUID()}`
  const a = spawn()
  const b = spawn()
  const addressA = await a.start(KEY_A, channelName, false)
  const addressB = await b.start(KEY_B, channelName, true)
  await vi.waitFor(
    async () => {
      expect((await a.state()).peers).toEqual([addressB])
      expect((await b.state()).peers).toEqual([addressA])
    },
    { timeout: 10_000 },
  )

  const ch = channelKeyOf(7n)
  await a.put([record(addressB, unlock(11n, 1n), ch), record(addressB, unlock(12n, 2n), ch), record(addressB, secretRequest(13n))])
  // A's outbox empties only through B's Processed (the Unlocks) and Delivered (the SecretRequest).
  await vi.waitFor(async () => expect((await a.state()).outbox).toBe(0), { timeout: 10_000 })
  await vi.waitFor(async () => expect((await b.state()).outbox).toBe(0), { timeout: 10_000 })

  const stateA = await a.state()
  const stateB = await b.state()
  expect(stateB.received.filter((r) => r.type === 'Unlock').map((r) => r.id)).toEqual(['11', '12'])
  expect(stateB.received.map((r) => r.type).sort()).toEqual(['SecretRequest', 'Unlock', 'Unlock'])
  expect(stateB.received.every((r) => r.sender === addressA)).toBe(true)
  expect(stateA.acknowledged).toHaveLength(3)
  expect(stateA.stats.invalid + stateB.stats.invalid).toBe(0)
  expect(stateA.nodeGlobals || stateB.nodeGlobals).toBe(false)
})
