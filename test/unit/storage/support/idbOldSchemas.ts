import { openDB } from 'idb'
import { storageName } from '../../../../src/storage/identity.ts'
import type { OutboxRecord, PaymentRecord, SentLockRecord, SentProofRecord, StorageIdentity, StoredChange } from '../../../../src/storage/storage.ts'

export type OldRows = {
  changes: StoredChange[]
  outbox: OutboxRecord[]
  syncedBlock: bigint
  sentProofs?: SentProofRecord[]
  sentLocks?: SentLockRecord[]
  payments?: PaymentRecord[]
}

/**
 * Creates the IndexedDB database of `identity` as Sluice with schema version 1, 2, 3 or 4 did (frozen copies of those
 * migration steps and row shapes, not the current code), with a meta row and the given rows, and closes it.
 * Sent proofs and locks need version 2.
 */
export async function createOldDatabase(identity: StorageIdentity, version: 1 | 2 | 3 | 4, rows: OldRows): Promise<void> {
  const db = await openDB(storageName(identity), version, {
    upgrade(db) {
      db.createObjectStore('meta')
      db.createObjectStore('snapshot')
      db.createObjectStore('changes', { keyPath: 'seq' })
      db.createObjectStore('events', { keyPath: 'seq' })
      const payments = db.createObjectStore('payments', { keyPath: 'seq' })
      payments.createIndex('token', ['token', 'seq'])
      payments.createIndex('partner', ['partner', 'seq'])
      payments.createIndex('tokenPartner', ['token', 'partner', 'seq'])
      if (version >= 4) payments.createIndex('sentIdentifier', ['partner', 'sentId', 'seq'])
      const chainEvents = db.createObjectStore('chainEvents', { keyPath: ['block', 'logIndex'] })
      chainEvents.createIndex('address', ['address', 'block', 'logIndex'])
      chainEvents.createIndex('tokenNetwork', ['tokenNetwork', 'block', 'logIndex'])
      chainEvents.createIndex('channel', ['channel', 'block', 'logIndex'])
      db.createObjectStore('outbox', { keyPath: 'key' })
      db.createObjectStore('transactions', { keyPath: 'key' })
      if (version >= 2) {
        db.createObjectStore('sentProofs', { keyPath: ['channelKey', 'hash'] })
        db.createObjectStore('sentLocks', { keyPath: ['channelKey', 'added', 'hash'] })
      }
      if (version >= 3) db.createObjectStore('received', { keyPath: ['channelKey', 'nonce'] })
    },
  })
  const sent = (rows.sentProofs?.length ?? 0) + (rows.sentLocks?.length ?? 0) > 0
  if (sent && version < 2) throw new Error('sent proofs and locks need schema version 2')
  const tx = db.transaction(
    sent ? ['meta', 'changes', 'outbox', 'payments', 'sentProofs', 'sentLocks'] : ['meta', 'changes', 'outbox', 'payments'],
    'readwrite',
  )
  await tx.objectStore('meta').put({ ...identity, schemaVersion: version, syncedBlock: rows.syncedBlock, createdAt: 1_700_000_000_000 }, 'meta')
  for (const c of rows.changes) await tx.objectStore('changes').put(c)
  for (const r of rows.outbox) await tx.objectStore('outbox').put(r)
  // Versions 1 to 3 kept a payment with its lower-case token and partner, no identifier beside it; version 4 a sent
  // one's identifier too, as a decimal string.
  for (const p of rows.payments ?? []) {
    const sentId = version >= 4 && p.event !== 'EventPaymentReceivedSuccess' ? { sentId: p.identifier.toString() } : {}
    await tx.objectStore('payments').put({ seq: p.seq, token: p.token.toLowerCase(), partner: p.partner.toLowerCase(), ...sentId, record: p })
  }
  for (const p of rows.sentProofs ?? []) await tx.objectStore('sentProofs').put({ channelKey: p.channelKey, hash: p.balanceHash.toLowerCase(), record: p })
  for (const l of rows.sentLocks ?? []) {
    const row = { channelKey: l.channelKey, added: l.addedNonce.toString().padStart(20, '0'), hash: l.secrethash.toLowerCase(), record: l }
    await tx.objectStore('sentLocks').put(row)
  }
  await tx.done
  db.close()
}
