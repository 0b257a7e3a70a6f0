// Persistent storage asked without holding up the start (worker/persistence.ts): Firefox answers
// navigator.storage.persist() only when the person answers its prompt, and WebKit may have no navigator.storage at
// all. Here Chromium's are replaced by answers the test controls.
import { generatePrivateKey } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { startNode, type SluiceBrowserNode, type StartNodeOptions } from '../../worker/host.ts'
import { nodeOptions } from './support/nodeOptions.ts'
import { takeAway } from './support/takeAway.ts'

const started: SluiceBrowserNode[] = []
const restores: (() => void)[] = []
afterEach(async () => {
  for (const restore of restores.splice(0).reverse()) restore()
  for (const node of started.splice(0)) await node.stop()
})

async function start(extra: Partial<StartNodeOptions> = {}): Promise<SluiceBrowserNode> {
  // A start that waited for persist() would fail with START_TIMEOUT well before the test's own timeout.
  const node = await startNode(nodeOptions({ key: generatePrivateKey(), startTimeoutMs: 20_000, ...extra }))
  started.push(node)
  return node
}

/** navigator.storage's two calls answered as the test says, counted; `answer` settles the pending persist() calls. */
function storageAnswers({ persisted, persist }: { persisted: 'never' | boolean; persist: 'never' | 'later' | boolean }) {
  const storage = navigator.storage
  const calls = { persisted: 0, persist: 0 }
  const pending: ((answer: boolean) => void)[] = []
  storage.persisted = () => {
    calls.persisted++
    return persisted === 'never' ? new Promise<boolean>(() => {}) : Promise.resolve(persisted)
  }
  storage.persist = () => {
    calls.persist++
    if (typeof persist === 'boolean') return Promise.resolve(persist)
    return new Promise<boolean>((resolve) => void (persist === 'later' && pending.push(resolve)))
  }
  restores.push(() => {
    // Chromium's own, from StorageManager's prototype, again.
    delete (storage as Partial<StorageManager>).persisted
    delete (storage as Partial<StorageManager>).persist
  })
  return { calls, answer: (answer: boolean) => pending.splice(0).forEach((resolve) => resolve(answer)) }
}

describe('storagePersisted and persistStorage()', () => {
  test('persist() unanswered (a prompt nobody answers): the start ends, storagePersisted is undefined, persistStorage() ends at its bound with what persisted() says; the answer counts when it comes', async () => {
    const { calls, answer } = storageAnswers({ persisted: false, persist: 'later' })
    const node = await start()
    expect(calls.persist).toBe(1)
    expect(node.storagePersisted).toBeUndefined()

    const asked = performance.now()
    await expect(node.persistStorage({ timeoutMs: 300 })).resolves.toBe(false)
    const took = performance.now() - asked
    expect(took).toBeGreaterThanOrEqual(290)
    expect(took).toBeLessThan(1_500)
    expect(calls.persist).toBe(2)
    expect(node.storagePersisted).toBeUndefined()

    // The person answers the prompt at last.
    answer(true)
    await expect.poll(() => node.storagePersisted).toBe(true)
  }, 30_000)

  test('neither persist() nor persisted() answers: the start ends all the same; persistStorage() rejects with PERSIST_TIMEOUT within its bound and the read of persisted()', async () => {
    storageAnswers({ persisted: 'never', persist: 'never' })
    const node = await start()
    expect(node.storagePersisted).toBeUndefined()
    const asked = performance.now()
    await expect(node.persistStorage({ timeoutMs: 200 })).rejects.toMatchObject({
      code: 'PERSIST_TIMEOUT',
      message: expect.stringMatching(/persist\(\).*persisted\(\)/),
    })
    expect(performance.now() - asked).toBeLessThan(2_500)
  }, 30_000)

  test('already persistent: storagePersisted is true and nothing is asked', async () => {
    const { calls } = storageAnswers({ persisted: true, persist: 'never' })
    const node = await start()
    await expect.poll(() => node.storagePersisted).toBe(true)
    expect(calls.persist).toBe(0)
  }, 30_000)

  test('persistStorage: false asks nothing at start (storagePersisted is what persisted() says); node.persistStorage() asks and gives the answer', async () => {
    const { calls } = storageAnswers({ persisted: false, persist: true })
    const node = await start({ persistStorage: false })
    await expect.poll(() => node.storagePersisted).toBe(false)
    expect(calls.persist).toBe(0)
    await expect(node.persistStorage()).resolves.toBe(true)
    expect(calls.persist).toBe(1)
    expect(node.storagePersisted).toBe(true)
  }, 30_000)

  test('the browser refuses: storagePersisted is false (best effort)', async () => {
    storageAnswers({ persisted: false, persist: false })
    const node = await start()
    await expect.poll(() => node.storagePersisted).toBe(false)
  }, 30_000)

  test('no navigator.storage (WebKit): the start ends, storagePersisted stays undefined, persistStorage() rejects with BROWSER_UNSUPPORTED', async () => {
    restores.push(takeAway(navigator, 'storage'))
    const node = await start()
    expect(node.storagePersisted).toBeUndefined()
    await expect(node.persistStorage()).rejects.toMatchObject({ code: 'BROWSER_UNSUPPORTED', missing: ['storageManager'] })
    expect(node.storagePersisted).toBeUndefined()
  }, 30_000)
})
