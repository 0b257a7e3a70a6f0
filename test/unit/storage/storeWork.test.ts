import { describe, expect, test } from 'vitest'
import { StorageError } from '../../../src/storage/storage.ts'
import { StoreWork } from '../../../src/storage/storeWork.ts'

const later = <T>(ms: number, value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), ms))

describe('a store’s work in flight', () => {
  test('writes run one at a time in the order asked, a failed one does not stop the next', async () => {
    const work = new StoreWork()
    const order: string[] = []
    const slow = work.write(async () => {
      await later(30, 0)
      order.push('slow')
    }, 'slow')
    const failing = work.write(async () => {
      order.push('failing')
      throw new Error('disk full')
    }, 'the failing write')
    const fast = work.write(async () => order.push('fast'), 'fast')
    await expect(failing).rejects.toBeInstanceOf(StorageError)
    await expect(failing).rejects.toThrow('the failing write')
    await Promise.all([slow, fast])
    expect(order).toEqual(['slow', 'failing', 'fast'])
  })

  test('drain waits for the writes asked and the reads in flight, a failed read included', async () => {
    const work = new StoreWork()
    const ended: string[] = []
    void work.write(() => later(20, 0).then(() => void ended.push('write')), 'write')
    void work.read(
      later(40, 0).then(() => void ended.push('read')),
      'read',
    )
    const failed = work.read(
      later(10, 0).then(() => Promise.reject(new Error('gone'))),
      'the read',
    )
    await expect(failed).rejects.toMatchObject({ code: 'STORAGE' })
    await work.drain()
    expect(ended.sort()).toEqual(['read', 'write'])
  })
})
