import { deleteDB, openDB } from 'idb'
import { expect, test } from 'vitest'
import { storageName } from '../../src/storage/identity.ts'
import { openIdbStorage } from '../../src/storage/idbStorage.ts'
import { STORAGE_SCHEMA_VERSION, StorageClosedError, StorageLockedError } from '../../src/storage/storage.ts'
import { describeStorageContract } from '../unit/storage/storageContract.ts'
import { change, newIdentity } from '../unit/storage/support/records.ts'

// Real IndexedDB and Web Locks in Chromium.
describeStorageContract('IndexedDB (Chromium)', {
  open: (identity) => openIdbStorage(identity),
  destroy: (identity) => deleteDB(storageName(identity)),
  singleInstance: true,
})

test('the store holds the Web Lock named after it while open, and a second open is refused by it', async () => {
  const identity = newIdentity()
  const name = storageName(identity)
  const storage = await openIdbStorage(identity)
  expect((await navigator.locks.query()).held?.map((l) => [l.name, l.mode])).toContainEqual([name, 'exclusive'])
  await expect(openIdbStorage(identity)).rejects.toBeInstanceOf(StorageLockedError)
  await storage.close()
  expect((await navigator.locks.query()).held?.map((l) => l.name)).not.toContain(name)
  // Whoever holds the lock (another tab, a worker) keeps the store closed to us, without touching the database.
  await navigator.locks.request(name, async () => {
    await expect(openIdbStorage(identity)).rejects.toBeInstanceOf(StorageLockedError)
  })
  const again = await openIdbStorage(identity)
  await again.close()
})

test('a newer version opening the database in another tab closes the store and frees its lock', async () => {
  const identity = newIdentity()
  const storage = await openIdbStorage(identity)
  await storage.commit({ changes: [change(1)] })
  const newer = await openDB(storageName(identity), STORAGE_SCHEMA_VERSION + 1)
  await expect(storage.load()).rejects.toBeInstanceOf(StorageClosedError)
  expect((await navigator.locks.query()).held?.map((l) => l.name)).not.toContain(storageName(identity))
  newer.close()
  await deleteDB(storageName(identity))
})
