import { deleteDB, openDB } from 'idb'
import { expect, test } from 'vitest'
import { storageName } from '../../src/storage/identity.ts'
import { openIdbStorage } from '../../src/storage/idbStorage.ts'
import { STORAGE_SCHEMA_VERSION, StorageClosedError, StorageLockedError } from '../../src/storage/storage.ts'
import { describeStorageContract } from '../unit/storage/storageContract.ts'
import { createOldDatabase } from '../unit/storage/support/idbOldSchemas.ts'
import {
  change,
  journalEntry,
  newChannelKey,
  newIdentity,
  outbox,
  paymentsToIndex,
  randomAddress,
  received,
  sentLock,
  sentProof,
} from '../unit/storage/support/records.ts'

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

test.each([1, 2, 3, 4] as const)(
  'a database created by schema version %i opens, migrates to the current version and keeps its rows, and the new stores work',
  async (version) => {
    const identity = newIdentity()
    const ck = newChannelKey()
    const old = version >= 2 ? { sentProofs: [sentProof(ck, 1n)], sentLocks: [sentLock(ck, 1n, 2n)] } : {}
    const [token, target] = [randomAddress(), randomAddress()]
    const paid = paymentsToIndex(token, target)
    await createOldDatabase(identity, version, { changes: [change(1), change(2)], outbox: [outbox('a')], syncedBlock: 7n, payments: paid, ...old })
    let storage = await openIdbStorage(identity)
    const loaded = await storage.load()
    expect(loaded.meta).toMatchObject({ ...identity, schemaVersion: STORAGE_SCHEMA_VERSION, syncedBlock: 7n })
    expect(loaded.changes).toEqual([change(1), change(2)])
    expect(loaded.outbox).toEqual([outbox('a')])
    expect(await storage.sentPayment(target, 9n)).toEqual(paid[1])
    expect(await storage.sentPayment(target, 10n)).toBeUndefined()
    expect(await storage.payments({ partner: target })).toEqual(paid)
    expect(loaded.chainTransactions).toEqual([])
    const proof = sentProof(ck, 2n)
    const locks = [sentLock(ck, 2n), sentLock(ck, 3n, 4n)]
    const messages = [received(ck, 1n), received(ck, 3n, { type: 'Unlock' })]
    const journal = [journalEntry(12), journalEntry(3, 2)]
    await storage.commit({ changes: [change(3)], sentProofs: [proof], sentLocks: locks, received: messages, chainTransactions: { put: journal } })
    await storage.close()
    storage = await openIdbStorage(identity)
    for (const p of [...(old.sentProofs ?? []), proof]) expect(await storage.sentProof(ck, p.balanceHash)).toEqual(p)
    expect(await storage.sentLocks(ck, 1n)).toEqual(old.sentLocks ?? [])
    expect(await storage.sentLocks(ck, 3n)).toEqual(locks)
    expect(await storage.sentLocks(ck, 4n)).toEqual([locks[0]])
    expect(await storage.receivedMessage(ck, 1n)).toEqual(messages[0])
    expect(await storage.receivedMessage(ck, 2n)).toBeUndefined()
    expect(await storage.receivedMessage(ck, 3n)).toEqual(messages[1])
    expect((await storage.load()).changes.map((c) => c.seq)).toEqual([1, 2, 3])
    expect((await storage.load()).chainTransactions).toEqual([journal[1], journal[0]])
    await storage.close()
    const db = await openDB(storageName(identity))
    expect(db.version).toBe(STORAGE_SCHEMA_VERSION)
    expect([...db.objectStoreNames]).toEqual(expect.arrayContaining(['sentProofs', 'sentLocks', 'received', 'chainTransactions']))
    db.close()
    await deleteDB(storageName(identity))
  },
)
