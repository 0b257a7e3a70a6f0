import { openDB } from 'idb'
import { storageName } from '../../../../src/storage/identity.ts'
import type { OutboxRecord, StorageIdentity, StoredChange } from '../../../../src/storage/storage.ts'

/**
 * Creates the IndexedDB database of `identity` as Sluice with schema version 1 did (a frozen copy of that
 * migration step, not the current code), with a meta row and the given rows, and closes it.
 */
export async function createV1Database(
  identity: StorageIdentity,
  rows: { changes: StoredChange[]; outbox: OutboxRecord[]; syncedBlock: bigint },
): Promise<void> {
  const db = await openDB(storageName(identity), 1, {
    upgrade(db) {
      db.createObjectStore('meta')
      db.createObjectStore('snapshot')
      db.createObjectStore('changes', { keyPath: 'seq' })
      db.createObjectStore('events', { keyPath: 'seq' })
      const payments = db.createObjectStore('payments', { keyPath: 'seq' })
      payments.createIndex('token', ['token', 'seq'])
      payments.createIndex('partner', ['partner', 'seq'])
      payments.createIndex('tokenPartner', ['token', 'partner', 'seq'])
      const chainEvents = db.createObjectStore('chainEvents', { keyPath: ['block', 'logIndex'] })
      chainEvents.createIndex('address', ['address', 'block', 'logIndex'])
      chainEvents.createIndex('tokenNetwork', ['tokenNetwork', 'block', 'logIndex'])
      chainEvents.createIndex('channel', ['channel', 'block', 'logIndex'])
      db.createObjectStore('outbox', { keyPath: 'key' })
      db.createObjectStore('transactions', { keyPath: 'key' })
    },
  })
  const tx = db.transaction(['meta', 'changes', 'outbox'], 'readwrite')
  await tx.objectStore('meta').put({ ...identity, schemaVersion: 1, syncedBlock: rows.syncedBlock, createdAt: 1_700_000_000_000 }, 'meta')
  for (const c of rows.changes) await tx.objectStore('changes').put(c)
  for (const r of rows.outbox) await tx.objectStore('outbox').put(r)
  await tx.done
  db.close()
}
