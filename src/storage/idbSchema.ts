import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb'
import type { JournalEntry } from '../chain/transactionJournal.ts'
import { initialMeta } from './meta.ts'
import { hashKey, padNonce } from './sentRecords.ts'
import type {
  Meta,
  OutboxRecord,
  PaymentRecord,
  ReceivedRecord,
  SentLockRecord,
  SentProofRecord,
  Snapshot,
  StorageIdentity,
  StoredChainEvent,
  StoredChange,
  StoredEvent,
  TransactionRecord,
} from './storage.ts'
import { isSentPayment } from './storage.ts'

/** Keys of the single rows of the meta and snapshot stores. */
export const META_KEY = 'meta'
export const SNAPSHOT_KEY = 'snapshot'

/**
 * A payment with its lower-case token and partner beside it, for the indexes, and for a sent one its identifier
 * as a decimal string (keys cannot be bigints; a received row has none, so the index skips it).
 */
export type PaymentRow = { seq: number; token: string; partner: string; sentId?: string; record: PaymentRecord }

/**
 * A chain event with its keys beside it: IndexedDB keys cannot be bigints, so the block number is kept as a
 * number (a safe integer, checked on commit) and the channel id as a decimal string (only compared for equality).
 */
export type ChainEventRow = { block: number; logIndex: number; address: string; tokenNetwork?: string; channel?: string; record: StoredChainEvent }

/** A sent proof keyed by its channel and lower-case balance hash. */
export type SentProofRow = { channelKey: string; hash: string; record: SentProofRecord }

/**
 * A sent lock keyed by channel, addedNonce (zero-padded decimal: keys cannot be bigints, and string order is then
 * numeric order) and lower-case secret hash: the locks of one channel added up to a nonce are one key range.
 */
export type SentLockRow = { channelKey: string; added: string; hash: string; record: SentLockRecord }

/** A received message keyed by channel and nonce (zero-padded decimal, as for sent locks): one channel is one key range. */
export type ReceivedRow = { channelKey: string; nonce: string; record: ReceivedRecord }

export interface SluiceDbSchema extends DBSchema {
  meta: { key: string; value: Meta }
  snapshot: { key: string; value: Snapshot }
  changes: { key: number; value: StoredChange }
  events: { key: number; value: StoredEvent }
  payments: {
    key: number
    value: PaymentRow
    indexes: { token: [string, number]; partner: [string, number]; tokenPartner: [string, string, number]; sentIdentifier: [string, string, number] }
  }
  chainEvents: {
    key: [number, number]
    value: ChainEventRow
    indexes: { address: [string, number, number]; tokenNetwork: [string, number, number]; channel: [string, number, number] }
  }
  outbox: { key: string; value: OutboxRecord }
  transactions: { key: string; value: TransactionRecord }
  sentProofs: { key: [string, string]; value: SentProofRow }
  sentLocks: { key: [string, string, string]; value: SentLockRow }
  received: { key: [string, string]; value: ReceivedRow }
  /** The transaction journal, keyed by nonce (a number: key order is nonce order); the entry as it is. */
  chainTransactions: { key: number; value: JournalEntry }
}

export type SluiceDb = IDBPDatabase<SluiceDbSchema>
export type UpgradeTransaction = IDBPTransaction<SluiceDbSchema, StoreNames<SluiceDbSchema>[], 'versionchange'>

/**
 * Step `v` takes a database at version v - 1 to version v, inside the upgrade transaction. Steps run one after
 * another from the stored version, so a store several versions behind goes through each step in order. The
 * database version is STORAGE_SCHEMA_VERSION; the runner then sets the meta row's schemaVersion to it.
 */
export type IdbMigration = (db: SluiceDb, tx: UpgradeTransaction, identity: StorageIdentity) => void

export const idbMigrations: Record<number, IdbMigration> = {
  1(db, tx, identity) {
    db.createObjectStore('meta')
    db.createObjectStore('snapshot')
    db.createObjectStore('changes', { keyPath: 'seq' })
    db.createObjectStore('events', { keyPath: 'seq' })
    const payments = db.createObjectStore('payments', { keyPath: 'seq' })
    payments.createIndex('token', ['token', 'seq'])
    payments.createIndex('partner', ['partner', 'seq'])
    payments.createIndex('tokenPartner', ['token', 'partner', 'seq'])
    const chainEvents = db.createObjectStore('chainEvents', { keyPath: ['block', 'logIndex'] })
    // Rows without a token network or channel have no entry in that index (a compound key path must resolve fully).
    chainEvents.createIndex('address', ['address', 'block', 'logIndex'])
    chainEvents.createIndex('tokenNetwork', ['tokenNetwork', 'block', 'logIndex'])
    chainEvents.createIndex('channel', ['channel', 'block', 'logIndex'])
    db.createObjectStore('outbox', { keyPath: 'key' })
    db.createObjectStore('transactions', { keyPath: 'key' })
    // A failure aborts the upgrade transaction, and with it the open: nothing to handle here.
    tx.objectStore('meta')
      .put({ ...initialMeta(identity), schemaVersion: 1 }, META_KEY)
      .catch(() => {})
  },
  // Sent balance proofs and sent locks (kept out of the state); nothing existing changes.
  2(db) {
    db.createObjectStore('sentProofs', { keyPath: ['channelKey', 'hash'] })
    db.createObjectStore('sentLocks', { keyPath: ['channelKey', 'added', 'hash'] })
  },
  // The partner's messages we applied, by channel and nonce; nothing existing changes.
  3(db) {
    db.createObjectStore('received', { keyPath: ['channelKey', 'nonce'] })
  },
  // Sent payments by target and identifier: the rows already stored are written again with their identifier.
  4(_db, tx) {
    const payments = tx.objectStore('payments')
    payments.createIndex('sentIdentifier', ['partner', 'sentId', 'seq'])
    // Requests made in the upgrade transaction keep it open until they are done; a failure aborts the open.
    const rewrite = async () => {
      for (let cursor = await payments.openCursor(); cursor; cursor = await cursor.continue()) await cursor.update(paymentRow(cursor.value.record))
    }
    rewrite().catch(() => {})
  },
  // The account's transaction journal, by nonce (docs/decisions/0051); nothing existing changes.
  5(db) {
    db.createObjectStore('chainTransactions', { keyPath: 'nonce' })
  },
}

export function paymentRow(p: PaymentRecord): PaymentRow {
  const sentId = isSentPayment(p) ? p.identifier.toString() : undefined
  return { seq: p.seq, token: p.token.toLowerCase(), partner: p.partner.toLowerCase(), ...(sentId !== undefined ? { sentId } : {}), record: p }
}

export function chainEventRow(e: StoredChainEvent): ChainEventRow {
  return {
    block: Number(e.blockNumber),
    logIndex: e.logIndex,
    address: e.address.toLowerCase(),
    ...(e.tokenNetwork !== undefined ? { tokenNetwork: e.tokenNetwork.toLowerCase() } : {}),
    ...(e.channelId !== undefined ? { channel: e.channelId.toString() } : {}),
    record: e,
  }
}

export function sentProofRow(p: SentProofRecord): SentProofRow {
  return { channelKey: p.channelKey, hash: hashKey(p.balanceHash), record: p }
}

export function sentLockRow(l: SentLockRecord): SentLockRow {
  return { channelKey: l.channelKey, added: padNonce(l.addedNonce), hash: hashKey(l.secrethash), record: l }
}

export function receivedRow(r: ReceivedRecord): ReceivedRow {
  return { channelKey: r.channelKey, nonce: padNonce(r.nonce), record: r }
}
