import 'fake-indexeddb/auto'
import { deleteDB, openDB } from 'idb'
import { expect, test } from 'vitest'
import { storageName } from '../../../src/storage/identity.ts'
import { openIdbStorage } from '../../../src/storage/idbStorage.ts'
import { STORAGE_SCHEMA_VERSION, StorageClosedError, StorageError, StorageVersionError } from '../../../src/storage/storage.ts'
import { describeStorageContract } from './storageContract.ts'
import { createV1Database } from './support/idbV1.ts'
import { change, newChannelKey, newIdentity, outbox, sentLock, sentProof } from './support/records.ts'

// Node has no Web Locks: single instance is shown in Chromium (test/browser/storage.test.ts).
describeStorageContract('IndexedDB (fake-indexeddb)', {
  open: (identity) => openIdbStorage(identity),
  destroy: (identity) => deleteDB(storageName(identity)),
  singleInstance: false,
})

test('the database is named after chain, registry and address, with one object store per kind of row', async () => {
  const identity = newIdentity()
  const storage = await openIdbStorage(identity)
  await storage.close()
  const name = `sluice:31337:${identity.registry.toLowerCase()}:${identity.address.toLowerCase()}`
  expect((await indexedDB.databases()).map((d) => d.name)).toContain(name)
  const db = await openDB(name)
  expect(db.version).toBe(STORAGE_SCHEMA_VERSION)
  expect([...db.objectStoreNames].sort()).toEqual([
    'chainEvents',
    'changes',
    'events',
    'meta',
    'outbox',
    'payments',
    'sentLocks',
    'sentProofs',
    'snapshot',
    'transactions',
  ])
  const tx = db.transaction(['payments', 'chainEvents'])
  expect([...tx.objectStore('payments').indexNames].sort()).toEqual(['partner', 'token', 'tokenPartner'])
  expect([...tx.objectStore('chainEvents').indexNames].sort()).toEqual(['address', 'channel', 'tokenNetwork'])
  db.close()
})

test('another connection upgrading the database closes the store instead of blocking it', async () => {
  const identity = newIdentity()
  const storage = await openIdbStorage(identity)
  await storage.commit({ changes: [change(1)] })
  // A newer version of the app in another tab: its upgrade goes through because the store lets go.
  const newer = await openDB(storageName(identity), STORAGE_SCHEMA_VERSION + 1)
  await expect(storage.commit({ changes: [change(2)] })).rejects.toBeInstanceOf(StorageClosedError)
  await expect(storage.load()).rejects.toThrow(/upgrades or deletes/)
  newer.close()
  // And this version cannot open what the newer one wrote.
  await expect(openIdbStorage(identity)).rejects.toBeInstanceOf(StorageVersionError)
  await storage.close()
})

test("a database of the same name without this node's meta is refused", async () => {
  const identity = newIdentity()
  const foreign = await openDB(storageName(identity), STORAGE_SCHEMA_VERSION, { upgrade: (db) => void db.createObjectStore('meta') })
  foreign.close()
  await expect(openIdbStorage(identity)).rejects.toBeInstanceOf(StorageError)
})

test('a database of schema version 1 is upgraded: its rows are kept, its meta says version 2, and the new stores work', async () => {
  const identity = newIdentity()
  await createV1Database(identity, { changes: [change(1), change(2)], outbox: [outbox('a')], syncedBlock: 7n })
  const storage = await openIdbStorage(identity)
  const loaded = await storage.load()
  expect(loaded.meta).toMatchObject({ ...identity, schemaVersion: STORAGE_SCHEMA_VERSION, syncedBlock: 7n, createdAt: 1_700_000_000_000 })
  expect(loaded.changes).toEqual([change(1), change(2)])
  expect(loaded.outbox).toEqual([outbox('a')])
  const ck = newChannelKey()
  const [proof, lock] = [sentProof(ck, 1n), sentLock(ck, 1n)]
  await storage.commit({ changes: [change(3)], sentProofs: [proof], sentLocks: [lock] })
  expect(await storage.sentProof(ck, proof.balanceHash)).toEqual(proof)
  expect(await storage.sentLocks(ck, 1n)).toEqual([lock])
  await storage.close()
  const db = await openDB(storageName(identity))
  expect(db.version).toBe(STORAGE_SCHEMA_VERSION)
  db.close()
})
