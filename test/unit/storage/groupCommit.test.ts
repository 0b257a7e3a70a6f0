import { describe, expect, test } from 'vitest'
import { GroupCommit, type Batch } from '../../../src/storage/groupCommit.ts'
import type { BatchOp } from '../../../src/storage/serviceStore.ts'

// A store of numbers by key, in memory: its "disk" is the list of batches written, and a write fails on command.
type Tx = { get(key: string): number | undefined; put(key: string, value: number): void }

function numberStore() {
  const durable = new Map<string, number>()
  const writes: string[][] = []
  let failNext = false
  let release: (() => void) | undefined
  const commits = new GroupCommit<Tx>({
    name: 'the numbers store',
    newBatch: (): Batch<Tx> => {
      const written = new Map<string, number>()
      return {
        step: () => {
          const own = new Map<string, number>()
          return {
            tx: { get: (key) => own.get(key) ?? written.get(key) ?? durable.get(key), put: (key, value) => void own.set(key, value) },
            keep: () => own.forEach((value, key) => written.set(key, value)),
          }
        },
        ops: () => [...written].map(([key, value]): BatchOp => ({ type: 'put', key, value: Uint8Array.of(value) })),
        apply: () => written.forEach((value, key) => durable.set(key, value)),
      }
    },
    write: async (ops) => {
      // The first write waits for `release` (when held), so that the next steps queue behind it.
      if (release === undefined && holding) await new Promise<void>((r) => (release = r))
      if (failNext) throw new Error('disk full')
      writes.push(ops.map((op) => op.key))
    },
  })
  let holding = false
  return {
    commits,
    durable,
    writes,
    hold: () => (holding = true),
    release: () => release?.(),
    failNextWrite: () => (failNext = true),
  }
}

describe('group commit', () => {
  test('steps queued during a write go in the next batch, each seeing those before it; a throwing step is dropped alone', async () => {
    const store = numberStore()
    store.hold()
    const first = store.commits.transact((tx) => tx.put('a', 1))
    const seen: (number | undefined)[] = []
    const later = [
      store.commits.transact((tx) => tx.put('b', 2)),
      store.commits.transact((tx) => {
        tx.put('c', 3)
        throw new Error('a bug in a step')
      }),
      store.commits.transact((tx) => {
        seen.push(tx.get('b'), tx.get('c'))
        tx.put('d', 4)
        return 'done'
      }),
    ]
    // Nothing is answered before its batch is durable.
    let answered = false
    void first.then(() => (answered = true))
    await new Promise((r) => setTimeout(r, 20))
    expect(answered).toBe(false)
    store.release()
    expect((await Promise.allSettled([first, ...later])).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
    expect(await later[2]).toBe('done')
    expect(seen).toEqual([2, undefined])
    expect(store.writes).toEqual([['a'], ['b', 'd']])
    expect([...store.durable.keys()].sort()).toEqual(['a', 'b', 'd'])
  })

  test('a batch that writes nothing is answered without a write', async () => {
    const store = numberStore()
    expect(await store.commits.transact((tx) => tx.get('a'))).toBeUndefined()
    expect(store.writes).toEqual([])
  })

  test('a failed write rejects its batch and everything after it with a StorageError, and the memory does not follow', async () => {
    const store = numberStore()
    await store.commits.transact((tx) => tx.put('a', 1))
    store.failNextWrite()
    await expect(store.commits.transact((tx) => tx.put('a', 2))).rejects.toMatchObject({
      code: 'STORAGE',
      message: expect.stringContaining('writing the numbers store failed'),
    })
    expect(store.commits.failed).toMatchObject({ code: 'STORAGE' })
    await expect(store.commits.transact((tx) => tx.get('a'))).rejects.toBe(store.commits.failed)
    expect(store.durable.get('a')).toBe(1)
  })

  test('close waits for the write under way; after it every step is refused (STORAGE_CLOSED)', async () => {
    const store = numberStore()
    store.hold()
    const pending = store.commits.transact((tx) => tx.put('a', 1))
    let closed = false
    const closing = store.commits.close().then(() => (closed = true))
    await new Promise((r) => setTimeout(r, 20))
    expect(closed).toBe(false)
    expect(store.commits.closed).toBe(true)
    store.release()
    await closing
    await pending
    expect(store.durable.get('a')).toBe(1)
    await expect(store.commits.transact((tx) => tx.put('b', 2))).rejects.toMatchObject({
      code: 'STORAGE_CLOSED',
      message: 'the numbers store is closed',
    })
  })
})
