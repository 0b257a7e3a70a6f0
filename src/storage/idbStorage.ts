import { openDB, type IDBPTransaction, type StoreNames } from 'idb'
import type { Address, Hex } from 'viem'
import { asStorageError } from './asStorageError.ts'
import { checkCommit } from './checkCommit.ts'
import { checkDump, progressOf } from './dump.ts'
import { checkIdentity, sameIdentity, storageName } from './identity.ts'
import {
  chainEventRow,
  idbMigrations,
  META_KEY,
  paymentRow,
  receivedRow,
  sentLockRow,
  sentProofRow,
  SNAPSHOT_KEY,
  type SluiceDb,
  type SluiceDbSchema,
} from './idbSchema.ts'
import { mergeMeta } from './meta.ts'
import { blockSpan, chainEventMatches, checkPage } from './queries.ts'
import { byReceivedKey, receivedQuery } from './receivedRecords.ts'
import { lockAlive, padNonce, sentLocksQuery, sentProofQuery } from './sentRecords.ts'
import {
  STORAGE_SCHEMA_VERSION,
  StorageClosedError,
  StorageError,
  StorageLockedError,
  StorageVersionError,
  type ChainEventQuery,
  type Commit,
  type Loaded,
  type PaymentQuery,
  type PaymentRecord,
  type ReceivedRecord,
  type SentLockRecord,
  type SentProofRecord,
  type Storage,
  type StorageDump,
  type DumpOptions,
  type StorageIdentity,
  type StoredChainEvent,
  type StoredEvent,
} from './storage.ts'
import { takeWebLock } from './webLock.ts'

export type OpenIdbStorageOptions = {
  /** Ask the browser to keep the origin's storage under storage pressure (`navigator.storage.persist()`). Default true. */
  persist?: boolean
  /**
   * Called once if the browser takes the database away while it is open: another connection upgrades or deletes it
   * (site data cleared), or the browser closed it. The store is unusable from then on; a host stops its node.
   */
  onLost?: (reason: string) => void
}

type StoreName = StoreNames<SluiceDbSchema>
const ALL_STORES: StoreName[] = [
  'meta',
  'snapshot',
  'changes',
  'events',
  'payments',
  'chainEvents',
  'outbox',
  'transactions',
  'sentProofs',
  'sentLocks',
  'received',
  'chainTransactions',
]

/**
 * Opens the node's IndexedDB store: database `sluice:<chainId>:<registry>:<address>`, upgraded step by step to
 * STORAGE_SCHEMA_VERSION. In a browser it first takes the exclusive Web Lock of that name for the store's
 * lifetime, so a second tab or worker gets StorageLockedError instead of becoming a second writer.
 */
export async function openIdbStorage(identity: StorageIdentity, options: OpenIdbStorageOptions = {}): Promise<Storage> {
  checkIdentity(identity)
  const name = storageName(identity)
  const release = await takeWebLock(name)
  try {
    const storage = await connect(name, identity, release, options.onLost)
    if (options.persist !== false) requestPersistence()
    return storage
  } catch (e) {
    release()
    throw e
  }
}

async function connect(name: string, identity: StorageIdentity, release: () => void, onLost?: (reason: string) => void): Promise<IdbStorage> {
  let storage: IdbStorage | undefined
  let rejectBlocked: (e: Error) => void = () => {}
  const blocked = new Promise<never>((_, reject) => (rejectBlocked = reject))
  const opening = openDB<SluiceDbSchema>(name, STORAGE_SCHEMA_VERSION, {
    upgrade(db, oldVersion, newVersion, tx) {
      const to = newVersion ?? oldVersion
      for (let v = oldVersion + 1; v <= to; v++) {
        const step = idbMigrations[v]
        if (!step) throw new StorageError(`no migration to schema version ${v}`)
        step(db, tx, identity)
      }
      // The meta row says which schema the data has: the one the steps took it to. Without meta it is not our
      // database, which the open refuses below. A failure aborts the upgrade, and with it the open.
      if (!db.objectStoreNames.contains('meta')) return
      const meta = tx.objectStore('meta')
      meta
        .get(META_KEY)
        .then((m) => (m && m.schemaVersion !== to ? meta.put({ ...m, schemaVersion: to }, META_KEY) : undefined))
        .catch(() => {})
    },
    // An older connection that ignores versionchange keeps our upgrade waiting: fail now rather than hang.
    blocked() {
      rejectBlocked(new StorageLockedError(`the store ${name} is still open with an older schema elsewhere; close that tab or worker`))
    },
    blocking() {
      storage?.lose('another connection upgrades or deletes the database')
    },
    terminated() {
      storage?.lose('the browser closed the database')
    },
  })
  let db: SluiceDb
  try {
    db = await Promise.race([opening, blocked])
  } catch (e) {
    opening.then(
      (late) => late.close(),
      () => {},
    )
    if (e instanceof DOMException && e.name === 'VersionError') {
      throw new StorageVersionError(`the store ${name} has a schema newer than version ${STORAGE_SCHEMA_VERSION} (written by a newer Sluice)`, { cause: e })
    }
    throw asStorageError(e, `opening ${name}`)
  }
  try {
    const meta = await db.get('meta', META_KEY)
    if (!meta || !sameIdentity(meta, identity)) throw new StorageError(`the database ${name} holds no meta of this node`)
  } catch (e) {
    db.close()
    throw asStorageError(e, `opening ${name}`)
  }
  storage = new IdbStorage(identity, db, release, onLost)
  return storage
}

function requestPersistence(): void {
  const storage = (globalThis as { navigator?: { storage?: StorageManager } }).navigator?.storage
  // Best effort: the browser may refuse, and the node works either way.
  storage?.persist?.().catch(() => {})
}

class IdbStorage implements Storage {
  #closed: string | undefined
  readonly #pending = new Set<Promise<unknown>>()

  constructor(
    private readonly identity: StorageIdentity,
    private readonly db: SluiceDb,
    private readonly release: () => void,
    private readonly onLost: ((reason: string) => void) | undefined,
  ) {}

  async commit(batch: Commit): Promise<void> {
    this.usable()
    checkCommit(batch, this.identity)
    const stores = storesOf(batch)
    if (stores.length > 0) await this.track(this.write(stores, batch))
  }

  private async write(stores: StoreName[], batch: Commit): Promise<void> {
    const tx = this.db.transaction(stores, 'readwrite', { durability: batch.relaxed ? 'relaxed' : 'strict' })
    const patch = batch.meta && { ...batch.meta }
    try {
      // Every row is queued (and so cloned) synchronously, in this call: the caller changing its objects later
      // cannot reach the store, and a value that cannot be cloned throws before the transaction can commit.
      if (batch.changes?.length) {
        const changes = tx.objectStore('changes')
        // add, not put: the log is append-only, and a seq that exists fails the whole commit.
        for (const c of batch.changes) quiet(changes.add(c))
      }
      if (batch.pruneChangesUpTo !== undefined) quiet(tx.objectStore('changes').delete(IDBKeyRange.upperBound(batch.pruneChangesUpTo)))
      if (batch.snapshot) quiet(tx.objectStore('snapshot').put(batch.snapshot, SNAPSHOT_KEY))
      for (const e of batch.events ?? []) quiet(tx.objectStore('events').put(e))
      for (const p of batch.payments ?? []) quiet(tx.objectStore('payments').put(paymentRow(p)))
      for (const e of batch.chainEvents ?? []) quiet(tx.objectStore('chainEvents').put(chainEventRow(e)))
      for (const r of batch.outbox?.put ?? []) quiet(tx.objectStore('outbox').put(r))
      for (const k of batch.outbox?.delete ?? []) quiet(tx.objectStore('outbox').delete(k))
      for (const r of batch.transactions?.put ?? []) quiet(tx.objectStore('transactions').put(r))
      for (const k of batch.transactions?.delete ?? []) quiet(tx.objectStore('transactions').delete(k))
      // put replaces a row of the same key: the same proof recorded again, a lock written again with removedNonce.
      for (const p of batch.sentProofs ?? []) quiet(tx.objectStore('sentProofs').put(sentProofRow(p)))
      for (const l of batch.sentLocks ?? []) quiet(tx.objectStore('sentLocks').put(sentLockRow(l)))
      for (const r of batch.received ?? []) quiet(tx.objectStore('received').put(receivedRow(r)))
      for (const e of batch.chainTransactions?.put ?? []) quiet(tx.objectStore('chainTransactions').put(e))
      for (const nonce of batch.chainTransactions?.delete ?? []) quiet(tx.objectStore('chainTransactions').delete(nonce))
      if (patch) {
        // Read-merge-write inside the transaction: IndexedDB runs overlapping write transactions one at a time.
        const meta = await tx.objectStore('meta').get(META_KEY)
        if (!meta) throw new StorageError('the store has no meta')
        quiet(tx.objectStore('meta').put(mergeMeta(meta, patch), META_KEY))
      }
    } catch (e) {
      throw await abort(tx, e, 'commit')
    }
    await done(tx, 'commit')
  }

  async load(): Promise<Loaded> {
    this.usable()
    const tx = this.db.transaction(['meta', 'snapshot', 'changes', 'outbox', 'transactions', 'chainTransactions'], 'readonly')
    const meta = await tx.objectStore('meta').get(META_KEY)
    const snapshot = await tx.objectStore('snapshot').get(SNAPSHOT_KEY)
    const changes = await tx.objectStore('changes').getAll(snapshot ? IDBKeyRange.lowerBound(snapshot.seq, true) : undefined)
    const outbox = await tx.objectStore('outbox').getAll()
    const transactions = await tx.objectStore('transactions').getAll()
    // Key order: nonce order.
    const chainTransactions = await tx.objectStore('chainTransactions').getAll()
    if (!meta) throw new StorageError('the store has no meta')
    return { meta, ...(snapshot ? { snapshot } : {}), changes, outbox, transactions, chainTransactions }
  }

  async payments(query: PaymentQuery): Promise<PaymentRecord[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    if (limit === 0) return []
    const store = this.db.transaction('payments').store
    const token = query.token?.toLowerCase()
    const partner = query.partner?.toLowerCase()
    // Each filter has its index, ordered by seq after the filtered fields: the page is one contiguous range.
    const cursor =
      token !== undefined && partner !== undefined
        ? store.index('tokenPartner').openCursor(IDBKeyRange.bound([token, partner, -Infinity], [token, partner, Infinity]))
        : token !== undefined
          ? store.index('token').openCursor(IDBKeyRange.bound([token, -Infinity], [token, Infinity]))
          : partner !== undefined
            ? store.index('partner').openCursor(IDBKeyRange.bound([partner, -Infinity], [partner, Infinity]))
            : store.openCursor()
    return (await page(cursor, offset, limit)).map((row) => row.record)
  }

  async sentPayment(target: Address, identifier: bigint): Promise<PaymentRecord | undefined> {
    this.usable()
    const partner = target.toLowerCase()
    const id = identifier.toString()
    const range = IDBKeyRange.bound([partner, id, -Infinity], [partner, id, Infinity])
    const cursor = await this.db.transaction('payments').store.index('sentIdentifier').openCursor(range, 'prev')
    return cursor?.value.record
  }

  async events(query: { limit?: number; offset?: number }): Promise<StoredEvent[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    if (limit === 0) return []
    return page(this.db.transaction('events').store.openCursor(), offset, limit)
  }

  async chainEvents(query: ChainEventQuery): Promise<StoredChainEvent[]> {
    this.usable()
    const span = blockSpan(query)
    if (!span) return []
    const store = this.db.transaction('chainEvents').store
    const within = (key: string) => IDBKeyRange.bound([key, span.from, -Infinity], [key, span.to, Infinity])
    // The narrowest index the query allows; the other filters are applied to its rows.
    const rows =
      query.channelId !== undefined
        ? await store.index('channel').getAll(within(query.channelId.toString()))
        : query.tokenNetwork !== undefined
          ? await store.index('tokenNetwork').getAll(within(query.tokenNetwork.toLowerCase()))
          : query.address !== undefined
            ? await store.index('address').getAll(within(query.address.toLowerCase()))
            : await store.getAll(IDBKeyRange.bound([span.from, -Infinity], [span.to, Infinity]))
    return rows.map((row) => row.record).filter((e) => chainEventMatches(e, query))
  }

  async sentProof(channelKey: string, balanceHash: Hex): Promise<SentProofRecord | undefined> {
    this.usable()
    const q = sentProofQuery(channelKey, balanceHash)
    return (await this.db.get('sentProofs', [q.channelKey, q.hash]))?.record
  }

  async sentLocks(channelKey: string, nonce: bigint): Promise<SentLockRecord[]> {
    this.usable()
    const q = sentLocksQuery(channelKey, nonce)
    if (!q) return []
    // The channel's locks added up to `nonce`, in key order (addedNonce, then secret hash): [] sorts after every
    // string, and [channelKey] before every longer key that starts with it.
    const rows = await this.db.getAll('sentLocks', IDBKeyRange.bound([q.channelKey], [q.channelKey, padNonce(q.nonce), []]))
    return rows.map((row) => row.record).filter((l) => lockAlive(l, q.nonce))
  }

  async receivedMessage(channelKey: string, nonce: bigint): Promise<ReceivedRecord | undefined> {
    this.usable()
    const q = receivedQuery(channelKey, nonce)
    if (!q) return undefined
    return (await this.db.get('received', [q.channelKey, padNonce(q.nonce)]))?.record
  }

  async exportDump(options: DumpOptions = {}): Promise<StorageDump> {
    this.usable()
    const all = !options.recovery
    const tx = this.db.transaction(ALL_STORES, 'readonly')
    const meta = await tx.objectStore('meta').get(META_KEY)
    const snapshot = all ? await tx.objectStore('snapshot').get(SNAPSHOT_KEY) : undefined
    const changes = all ? await tx.objectStore('changes').getAll() : []
    const events = all ? await tx.objectStore('events').getAll() : []
    const payments = all ? await tx.objectStore('payments').getAll() : []
    const chainEvents = all ? await tx.objectStore('chainEvents').getAll() : []
    const outbox = await tx.objectStore('outbox').getAll()
    const transactions = await tx.objectStore('transactions').getAll()
    const sentProofs = all ? await tx.objectStore('sentProofs').getAll() : []
    const sentLocks = all ? await tx.objectStore('sentLocks').getAll() : []
    const received = all ? await tx.objectStore('received').getAll() : []
    const chainTransactions = all ? await tx.objectStore('chainTransactions').getAll() : []
    if (!meta) throw new StorageError('the store has no meta')
    return {
      format: 'sluice-dump',
      meta,
      ...(snapshot ? { snapshot } : {}),
      changes,
      events,
      payments: payments.map((row) => row.record),
      chainEvents: chainEvents.map((row) => row.record),
      outbox,
      transactions,
      sentProofs: sentProofs.map((row) => row.record),
      sentLocks: sentLocks.map((row) => row.record),
      received: received.map((row) => row.record).sort(byReceivedKey),
      chainTransactions,
    }
  }

  async importDump(dump: StorageDump): Promise<void> {
    this.usable()
    await this.track(this.replace(dump))
  }

  private async replace(dump: StorageDump): Promise<void> {
    const tx = this.db.transaction(ALL_STORES, 'readwrite', { durability: 'strict' })
    try {
      // Checked against the store inside the transaction that replaces it, so nothing can slip in between.
      const meta = await tx.objectStore('meta').get(META_KEY)
      const snapshot = await tx.objectStore('snapshot').get(SNAPSHOT_KEY)
      const lastChange = await tx.objectStore('changes').openKeyCursor(null, 'prev')
      if (!meta) throw new StorageError('the store has no meta')
      const d = checkDump(dump, this.identity, { meta, progress: progressOf(snapshot?.seq, lastChange?.key) })
      for (const name of ALL_STORES) quiet(tx.objectStore(name).clear())
      quiet(tx.objectStore('meta').put(d.meta, META_KEY))
      if (d.snapshot) quiet(tx.objectStore('snapshot').put(d.snapshot, SNAPSHOT_KEY))
      for (const c of d.changes) quiet(tx.objectStore('changes').put(c))
      for (const e of d.events) quiet(tx.objectStore('events').put(e))
      for (const p of d.payments) quiet(tx.objectStore('payments').put(paymentRow(p)))
      for (const e of d.chainEvents) quiet(tx.objectStore('chainEvents').put(chainEventRow(e)))
      for (const r of d.outbox) quiet(tx.objectStore('outbox').put(r))
      for (const r of d.transactions) quiet(tx.objectStore('transactions').put(r))
      for (const p of d.sentProofs ?? []) quiet(tx.objectStore('sentProofs').put(sentProofRow(p)))
      for (const l of d.sentLocks ?? []) quiet(tx.objectStore('sentLocks').put(sentLockRow(l)))
      for (const r of d.received ?? []) quiet(tx.objectStore('received').put(receivedRow(r)))
      for (const e of d.chainTransactions ?? []) quiet(tx.objectStore('chainTransactions').put(e))
    } catch (e) {
      throw await abort(tx, e, 'importDump')
    }
    await done(tx, 'importDump')
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = 'the store is closed'
    await Promise.allSettled(this.#pending)
    this.db.close()
    this.release()
  }

  /** The engine took the database away (another connection upgrades or deletes it): unusable from now on. */
  lose(reason: string): void {
    if (this.#closed) return
    this.#closed = `the store was closed: ${reason}`
    this.db.close()
    this.release()
    this.onLost?.(reason)
  }

  private usable(): void {
    if (this.#closed) throw new StorageClosedError(this.#closed)
  }

  private async track<T>(work: Promise<T>): Promise<T> {
    this.#pending.add(work)
    try {
      return await work
    } finally {
      this.#pending.delete(work)
    }
  }
}

function storesOf(batch: Commit): StoreName[] {
  const stores: StoreName[] = []
  if (batch.changes?.length || batch.pruneChangesUpTo !== undefined) stores.push('changes')
  if (batch.snapshot) stores.push('snapshot')
  if (batch.events?.length) stores.push('events')
  if (batch.payments?.length) stores.push('payments')
  if (batch.chainEvents?.length) stores.push('chainEvents')
  if (batch.outbox?.put?.length || batch.outbox?.delete?.length) stores.push('outbox')
  if (batch.transactions?.put?.length || batch.transactions?.delete?.length) stores.push('transactions')
  if (batch.sentProofs?.length) stores.push('sentProofs')
  if (batch.sentLocks?.length) stores.push('sentLocks')
  if (batch.received?.length) stores.push('received')
  if (batch.chainTransactions?.put?.length || batch.chainTransactions?.delete?.length) stores.push('chainTransactions')
  if (batch.meta) stores.push('meta')
  return stores
}

type WriteTransaction = IDBPTransaction<SluiceDbSchema, StoreName[], 'readwrite'>

/** A request whose failure needs no handler of its own: it aborts the transaction, and `done` reports it. */
function quiet(request: Promise<unknown>): void {
  request.catch(() => {})
}

/** Aborts `tx` (if the engine has not already) and gives the error to throw: the engine's own when it has one. */
async function abort(tx: WriteTransaction, error: unknown, what: string): Promise<StorageError> {
  try {
    tx.abort()
  } catch {
    // Already aborted by a failed request.
  }
  await tx.done.catch(() => {})
  return asStorageError(tx.error ?? error, what)
}

async function done(tx: WriteTransaction, what: string): Promise<void> {
  try {
    await tx.done
  } catch (e) {
    throw asStorageError(tx.error ?? e, what)
  }
}

type ValueCursor<V> = { value: V; advance(count: number): Promise<ValueCursor<V> | null>; continue(): Promise<ValueCursor<V> | null> }

/** Up to `limit` values from `offset` on, skipping with advance() so the rows before the page are never read. */
async function page<V>(opening: Promise<ValueCursor<V> | null>, offset: number, limit: number): Promise<V[]> {
  let cursor = await opening
  if (cursor && offset > 0) cursor = await cursor.advance(offset)
  const out: V[] = []
  while (cursor && out.length < limit) {
    out.push(cursor.value)
    cursor = out.length < limit ? await cursor.continue() : null
  }
  return out
}
