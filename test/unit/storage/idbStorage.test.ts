import 'fake-indexeddb/auto'
import { deleteDB, openDB } from 'idb'
import { expect, test } from 'vitest'
import { storageName } from '../../../src/storage/identity.ts'
import { openIdbStorage } from '../../../src/storage/idbStorage.ts'
import { STORAGE_SCHEMA_VERSION, StorageClosedError, StorageError, StorageVersionError } from '../../../src/storage/storage.ts'
import { describeStorageContract } from './storageContract.ts'
import { createOldDatabase } from './support/idbOldSchemas.ts'
import { change, journalEntry, newChannelKey, newIdentity, outbox, paymentsToIndex, randomAddress, received, sentLock, sentProof } from './support/records.ts'

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
    'chainTransactions',
    'changes',
    'events',
    'meta',
    'outbox',
    'payments',
    'received',
    'sentLocks',
    'sentProofs',
    'snapshot',
    'transactions',
  ])
  const tx = db.transaction(['payments', 'chainEvents'])
  expect([...tx.objectStore('payments').indexNames].sort()).toEqual(['partner', 'sentIdentifier', 'token', 'tokenPartner'])
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

test.each([1, 2, 3, 4] as const)(
  'a database of schema version %i is upgraded: its rows are kept, its meta says the current version, and the new stores work',
  async (version) => {
    const identity = newIdentity()
    const ck = newChannelKey()
    const old = version >= 2 ? { sentProofs: [sentProof(ck, 1n)], sentLocks: [sentLock(ck, 1n), sentLock(ck, 2n, 3n)] } : {}
    const [token, target] = [randomAddress(), randomAddress()]
    const paid = paymentsToIndex(token, target)
    await createOldDatabase(identity, version, { changes: [change(1), change(2)], outbox: [outbox('a')], syncedBlock: 7n, payments: paid, ...old })
    const storage = await openIdbStorage(identity)
    const loaded = await storage.load()
    expect(loaded.meta).toMatchObject({ ...identity, schemaVersion: STORAGE_SCHEMA_VERSION, syncedBlock: 7n, createdAt: 1_700_000_000_000 })
    expect(loaded.changes).toEqual([change(1), change(2)])
    expect(loaded.outbox).toEqual([outbox('a')])
    expect(await storage.sentPayment(target, 9n)).toEqual(paid[1])
    expect(await storage.sentPayment(target, 10n)).toBeUndefined()
    expect(await storage.payments({ partner: target })).toEqual(paid)
    for (const p of old.sentProofs ?? []) expect(await storage.sentProof(ck, p.balanceHash)).toEqual(p)
    if (old.sentLocks) expect(await storage.sentLocks(ck, 2n)).toEqual(old.sentLocks)
    // No transaction journal before version 5: the upgraded store starts with none, and keeps what it is given.
    expect(loaded.chainTransactions).toEqual([])
    const [proof, lock, message] = [sentProof(ck, 4n), sentLock(ck, 4n), received(ck, 4n)]
    const journal = [journalEntry(12), journalEntry(3, 2)]
    await storage.commit({ changes: [change(3)], sentProofs: [proof], sentLocks: [lock], received: [message], chainTransactions: { put: journal } })
    expect(await storage.sentProof(ck, proof.balanceHash)).toEqual(proof)
    expect(await storage.sentLocks(ck, 4n)).toEqual([...(old.sentLocks?.slice(0, 1) ?? []), lock])
    expect(await storage.receivedMessage(ck, 4n)).toEqual(message)
    await storage.close()
    const reopened = await openIdbStorage(identity)
    expect((await reopened.load()).chainTransactions).toEqual([journal[1], journal[0]])
    await reopened.close()
    const db = await openDB(storageName(identity))
    expect(db.version).toBe(STORAGE_SCHEMA_VERSION)
    expect([...db.objectStoreNames]).toEqual(expect.arrayContaining(['sentProofs', 'sentLocks', 'received', 'chainTransactions']))
    db.close()
  },
)
