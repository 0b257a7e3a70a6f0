import { expect, test } from 'vitest'
import { MemoryVolume, openMemoryStorage } from '../../../src/storage/memoryStorage.ts'
import { StorageLockedError } from '../../../src/storage/storage.ts'
import { describeStorageContract } from './storageContract.ts'
import { change, newIdentity } from './support/records.ts'

const volume = new MemoryVolume()

describeStorageContract('memory', {
  open: (identity) => openMemoryStorage(identity, { volume }),
  destroy: async (identity) => volume.delete(identity),
  singleInstance: true,
})

test('without a volume, each open is a new throwaway store', async () => {
  const identity = newIdentity()
  const first = await openMemoryStorage(identity)
  await first.commit({ changes: [change(1)] })
  const second = await openMemoryStorage(identity)
  expect((await second.load()).changes).toEqual([])
  await first.close()
  await second.close()
})

test('a volume keeps a closed store until it is deleted, and refuses to delete an open one', async () => {
  const identity = newIdentity()
  const shared = new MemoryVolume()
  const storage = await openMemoryStorage(identity, { volume: shared })
  await storage.commit({ changes: [change(1)] })
  expect(() => shared.delete(identity)).toThrow(StorageLockedError)
  await storage.close()
  const again = await openMemoryStorage(identity, { volume: shared })
  expect((await again.load()).changes).toEqual([change(1)])
  await again.close()
  shared.delete(identity)
  const fresh = await openMemoryStorage(identity, { volume: shared })
  expect((await fresh.load()).changes).toEqual([])
  await fresh.close()
})
