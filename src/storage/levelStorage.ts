import { ClassicLevel } from 'classic-level'
import type { Address, Hex } from 'viem'
import { join } from 'node:path'
import { deserialize, serialize } from 'node:v8'
import { asStorageError } from './asStorageError.ts'
import { checkCommit } from './checkCommit.ts'
import { checkDump, commitOfDump, progressOf } from './dump.ts'
import { checkIdentity, sameIdentity } from './identity.ts'
import {
  blockRange,
  CHAIN_EVENTS,
  CHAIN_TRANSACTIONS,
  chainTransactionKey,
  chainEventIndexKeys,
  chainEventIndexPrefix,
  chainEventKey,
  chainEventKeyOfIndexKey,
  CHANGES,
  changeKey,
  EVENTS,
  eventKey,
  levelDirName,
  META_KEY,
  OUTBOX,
  outboxKey,
  PAYMENTS,
  paymentIndexKeys,
  paymentIndexPrefix,
  paymentKey,
  paymentKeyOfIndexKey,
  prefixRange,
  sentIdentifierKey,
  sentIdentifierPrefix,
  RECEIVED,
  receivedKey,
  receivedKeyOf,
  SENT_LOCKS,
  SENT_PROOFS,
  sentLockKey,
  sentLocksRange,
  sentProofKey,
  sentProofKeyOf,
  SNAPSHOT_KEY,
  TRANSACTIONS,
  transactionKey,
} from './levelKeys.ts'
import { initialMeta, mergeMeta } from './meta.ts'
import { blockSpan, chainEventMatches, checkPage } from './queries.ts'
import { byReceivedKey, receivedQuery } from './receivedRecords.ts'
import { lockAlive, sentLocksQuery, sentProofQuery } from './sentRecords.ts'
import {
  STORAGE_SCHEMA_VERSION,
  StorageClosedError,
  StorageError,
  StorageLockedError,
  StorageVersionError,
  type ChainEventQuery,
  type Commit,
  type Loaded,
  type Meta,
  type PaymentQuery,
  type PaymentRecord,
  type ReceivedRecord,
  type SentLockRecord,
  type SentProofRecord,
  type Snapshot,
  type Storage,
  type StorageDump,
  type DumpOptions,
  type StorageIdentity,
  type StoredChainEvent,
  type StoredChange,
  type StoredEvent,
} from './storage.ts'
import { StoreWork } from './storeWork.ts'

// The only module that may import classic-level or node:*: the browser bundle never reaches it.

export type OpenLevelStorageOptions = { dataDir: string }

type LevelDb = ClassicLevel<string, Uint8Array>
type Op = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string }
type Range = { gte?: string; gt?: string; lt?: string; lte?: string; reverse?: boolean }

// node:v8 is the structured clone format: bigints and nested data, fast; a value it cannot clone throws.
const encode = (value: unknown): Uint8Array => serialize(value)
const decode = <T>(bytes: Uint8Array): T => deserialize(bytes) as T
const EMPTY = new Uint8Array(0)
const put = (key: string, value: unknown): Op => ({ type: 'put', key, value: encode(value) })

/** Where the store of `identity` lives: `<dataDir>/<chainId>-<registry>-<address>` (lower case). */
export function levelLocation(identity: StorageIdentity, dataDir: string): string {
  return join(dataDir, levelDirName(identity))
}

/**
 * Opens the node's LevelDB store for the headless node. Every commit is one batch written with `sync: true`
 * (fsync), so a resolved commit survives kill -9 and power loss. LevelDB's LOCK file keeps a second process
 * (or a second open in this one) out: that open fails with StorageLockedError.
 */
export async function openLevelStorage(identity: StorageIdentity, options: OpenLevelStorageOptions): Promise<Storage> {
  checkIdentity(identity)
  const location = levelLocation(identity, options.dataDir)
  const db: LevelDb = new ClassicLevel<string, Uint8Array>(location, { keyEncoding: 'utf8', valueEncoding: 'view' })
  try {
    await db.open()
  } catch (e) {
    if (hasCode(e, 'LEVEL_LOCKED')) throw new StorageLockedError(`the store ${location} is open in another process or instance`, { cause: e })
    throw asStorageError(e, `opening ${location}`)
  }
  try {
    return new LevelStorage(identity, db, await migrate(db, identity))
  } catch (e) {
    await db.close().catch(() => {})
    throw asStorageError(e, `opening ${location}`)
  }
}

/**
 * Step `v` takes a store at schema version v - 1 to v; it returns the writes to make, and the runner adds the
 * meta with the new version to the same synced batch, so each step is atomic and an interrupted run resumes.
 */
type LevelMigration = (db: LevelDb) => Promise<Op[]>

const levelMigrations: Record<number, LevelMigration> = {
  // A new store: nothing but its meta. Anything already there is not a Sluice store, so leave it alone.
  async 1(db) {
    for await (const key of db.keys({ limit: 1 }))
      throw new StorageError(`the directory holds a LevelDB store that is not Sluice's (found key ${key}, no meta)`)
    return []
  },
  // Sent proofs and sent locks: new key prefixes, empty in a store of version 1; nothing to convert.
  async 2() {
    return []
  },
  // The partner's messages we applied: a new key prefix, empty in a store of version 2; nothing to convert.
  async 3() {
    return []
  },
  // Sent payments by target and identifier: a new index of the payments already stored.
  async 4(db) {
    const ops: Op[] = []
    for await (const [, value] of db.iterator({ ...prefixRange(PAYMENTS) })) {
      const key = sentIdentifierKey(decode<PaymentRecord>(value))
      if (key) ops.push({ type: 'put', key, value: EMPTY })
    }
    return ops
  },
  // The transaction journal: a new key prefix, empty in a store of version 4; nothing to convert. The version still
  // moves, so that an older Sluice, which would not see the journal, refuses the store rather than reuse its nonces.
  async 5() {
    return []
  },
}

async function migrate(db: LevelDb, identity: StorageIdentity): Promise<Meta> {
  const stored = await db.get(META_KEY)
  let meta = stored ? decode<Meta>(stored) : undefined
  if (meta && !sameIdentity(meta, identity))
    throw new StorageError(`the store at ${db.location} belongs to another node (${meta.chainId}, ${meta.registry}, ${meta.address})`)
  const from = meta?.schemaVersion ?? 0
  if (from > STORAGE_SCHEMA_VERSION) {
    throw new StorageVersionError(`the store at ${db.location} has schema version ${from}, newer than ${STORAGE_SCHEMA_VERSION} (written by a newer Sluice)`)
  }
  for (let v = from + 1; v <= STORAGE_SCHEMA_VERSION; v++) {
    const step = levelMigrations[v]
    if (!step) throw new StorageError(`no migration to schema version ${v}`)
    const ops = await step(db)
    meta = { ...(meta ?? initialMeta(identity)), schemaVersion: v }
    await db.batch([...ops, put(META_KEY, meta)], { sync: true })
  }
  if (!meta) throw new StorageError(`the store at ${db.location} has no meta`)
  return meta
}

/**
 * A commit encoded when it is called, so that the caller changing its objects afterwards cannot reach the store,
 * and a value that cannot be encoded fails the call before anything is written. What needs the stored data
 * (append-only check, old index keys, keys to prune) is looked up when its turn to write comes.
 */
type Planned = {
  changeSeqs: number[]
  paymentKeys: string[]
  chainEventKeys: string[]
  prune?: number
  /** Rows and their index entries, in batch order. */
  puts: Op[]
  /** Outbox, transaction and journal deletes: after the puts, so a key both put and deleted is gone. */
  deletes: Op[]
  meta?: Partial<Meta>
}

function plan(batch: Commit): Planned {
  const prune = batch.pruneChangesUpTo
  const puts: Op[] = []
  for (const c of batch.changes ?? []) if (prune === undefined || c.seq > prune) puts.push(put(changeKey(c.seq), c))
  if (batch.snapshot) puts.push(put(SNAPSHOT_KEY, batch.snapshot))
  for (const e of batch.events ?? []) puts.push(put(eventKey(e.seq), e))
  for (const p of batch.payments ?? []) {
    puts.push(put(paymentKey(p.seq), p))
    for (const key of paymentIndexKeys(p)) puts.push({ type: 'put', key, value: EMPTY })
  }
  for (const e of batch.chainEvents ?? []) {
    puts.push(put(chainEventKey(e), e))
    for (const key of chainEventIndexKeys(e)) puts.push({ type: 'put', key, value: EMPTY })
  }
  for (const r of batch.outbox?.put ?? []) puts.push(put(outboxKey(r.key), r))
  for (const r of batch.transactions?.put ?? []) puts.push(put(transactionKey(r.key), r))
  // No index keys: a put under the same key replaces the row (a lock written again with its removedNonce).
  for (const p of batch.sentProofs ?? []) puts.push(put(sentProofKeyOf(p), p))
  for (const l of batch.sentLocks ?? []) puts.push(put(sentLockKey(l), l))
  for (const r of batch.received ?? []) puts.push(put(receivedKeyOf(r), r))
  for (const e of batch.chainTransactions?.put ?? []) puts.push(put(chainTransactionKey(e.nonce), e))
  const deletes: Op[] = [
    ...(batch.outbox?.delete ?? []).map((k): Op => ({ type: 'del', key: outboxKey(k) })),
    ...(batch.transactions?.delete ?? []).map((k): Op => ({ type: 'del', key: transactionKey(k) })),
    ...(batch.chainTransactions?.delete ?? []).map((nonce): Op => ({ type: 'del', key: chainTransactionKey(nonce) })),
  ]
  return {
    changeSeqs: (batch.changes ?? []).map((c) => c.seq),
    paymentKeys: (batch.payments ?? []).map((p) => paymentKey(p.seq)),
    chainEventKeys: (batch.chainEvents ?? []).map(chainEventKey),
    ...(prune !== undefined ? { prune } : {}),
    puts,
    deletes,
    ...(batch.meta ? { meta: { ...batch.meta } } : {}),
  }
}

class LevelStorage implements Storage {
  #closed = false
  // Writes run one at a time: each reads (old index entries, keys to prune) before its batch.
  readonly #work = new StoreWork()
  /**
   * The highest change seq stored (undefined: none; null: not read yet). The log only grows, so a seq above it cannot
   * be stored: the append-only check reads nothing for those, which is every commit but a faulty one.
   */
  #highestChange: number | undefined | null = null

  constructor(
    private readonly identity: StorageIdentity,
    private readonly db: LevelDb,
    private meta: Meta,
  ) {}

  async commit(batch: Commit): Promise<void> {
    this.usable()
    checkCommit(batch, this.identity)
    let planned: Planned
    try {
      planned = plan(batch)
    } catch (e) {
      throw asStorageError(e, 'commit')
    }
    await this.#work.write(() => this.write(planned, batch.relaxed === true), 'commit')
  }

  private async write(planned: Planned, relaxed: boolean): Promise<void> {
    const db = this.db
    if (this.#highestChange === null) this.#highestChange = await this.lastChangeSeq()
    const highest = this.#highestChange
    const maybeStored = highest === undefined ? [] : planned.changeSeqs.filter((seq) => seq <= highest)
    const stored = maybeStored.length > 0 ? await db.hasMany(maybeStored.map(changeKey)) : []
    const again = maybeStored.find((_, i) => stored[i])
    if (again !== undefined) throw new StorageError(`change ${again} is already stored (the log is append-only)`)
    // A row written again (same seq or position) may have other index keys than before: drop the old ones first.
    const dropped: Op[] = []
    for (const [keys, indexKeys] of [
      [planned.paymentKeys, (row: Uint8Array) => paymentIndexKeys(decode<PaymentRecord>(row))],
      [planned.chainEventKeys, (row: Uint8Array) => chainEventIndexKeys(decode<StoredChainEvent>(row))],
    ] as const) {
      if (keys.length === 0) continue
      for (const old of await db.getMany(keys)) if (old) for (const key of indexKeys(old)) dropped.push({ type: 'del', key })
    }
    if (planned.prune !== undefined) for await (const key of db.keys({ gte: CHANGES, lte: changeKey(planned.prune) })) dropped.push({ type: 'del', key })
    const meta = mergeMeta(this.meta, planned.meta)
    const ops = [...dropped, ...planned.puts, ...planned.deletes, ...(planned.meta ? [put(META_KEY, meta)] : [])]
    if (ops.length === 0) return
    // One batch: LevelDB applies it atomically; sync makes it durable before the promise resolves (a relaxed one
    // reaches the log in order, and the next synced batch flushes it).
    await db.batch(ops, { sync: !relaxed })
    this.meta = meta
    let top = highest
    for (const seq of planned.changeSeqs) if (top === undefined || seq > top) top = seq
    this.#highestChange = top
  }

  /** The seq of the last change in the log, if any (one key read backwards). */
  private async lastChangeSeq(): Promise<number | undefined> {
    const [last] = await this.db.keys({ ...prefixRange(CHANGES), reverse: true, limit: 1 }).all()
    return last === undefined ? undefined : Number(last.slice(CHANGES.length))
  }

  async load(): Promise<Loaded> {
    this.usable()
    return this.read('load', async (snapshot) => {
      const [meta, snap] = await this.db.getMany([META_KEY, SNAPSHOT_KEY], { snapshot })
      if (!meta) throw new StorageError('the store has no meta')
      const state = snap ? decode<Snapshot>(snap) : undefined
      const changes = prefixRange(CHANGES)
      return {
        meta: decode<Meta>(meta),
        ...(state ? { snapshot: state } : {}),
        changes: await this.values<StoredChange>(state ? { gt: changeKey(state.seq), lt: changes.lt } : changes, snapshot),
        outbox: await this.values({ ...prefixRange(OUTBOX) }, snapshot),
        transactions: await this.values({ ...prefixRange(TRANSACTIONS) }, snapshot),
        chainTransactions: await this.values({ ...prefixRange(CHAIN_TRANSACTIONS) }, snapshot),
      }
    })
  }

  async payments(query: PaymentQuery): Promise<PaymentRecord[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    if (limit === 0) return []
    return this.read('payments', async (snapshot) => {
      const prefix = paymentIndexPrefix(query.token, query.partner)
      const keys = await this.keys({ ...prefixRange(prefix) }, offset, limit, snapshot)
      return this.getMany<PaymentRecord>(prefix === PAYMENTS ? keys : keys.map(paymentKeyOfIndexKey), snapshot)
    })
  }

  async sentPayment(target: Address, identifier: bigint): Promise<PaymentRecord | undefined> {
    this.usable()
    return this.read('sentPayment', async (snapshot) => {
      const [last] = await this.keys({ ...prefixRange(sentIdentifierPrefix(target, identifier)), reverse: true }, 0, 1, snapshot)
      if (last === undefined) return undefined
      const [row] = await this.getMany<PaymentRecord>([paymentKeyOfIndexKey(last)], snapshot)
      return row
    })
  }

  async events(query: { limit?: number; offset?: number }): Promise<StoredEvent[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    if (limit === 0) return []
    return this.read('events', async (snapshot) => this.getMany<StoredEvent>(await this.keys({ ...prefixRange(EVENTS) }, offset, limit, snapshot), snapshot))
  }

  async chainEvents(query: ChainEventQuery): Promise<StoredChainEvent[]> {
    this.usable()
    const span = blockSpan(query)
    if (!span) return []
    return this.read('chainEvents', async (snapshot) => {
      const prefix = chainEventIndexPrefix(query)
      const keys = await this.keys(blockRange(prefix, span.from, span.to), 0, Infinity, snapshot)
      const rows = await this.getMany<StoredChainEvent>(prefix === CHAIN_EVENTS ? keys : keys.map(chainEventKeyOfIndexKey), snapshot)
      return rows.filter((e) => chainEventMatches(e, query))
    })
  }

  async sentProof(channelKey: string, balanceHash: Hex): Promise<SentProofRecord | undefined> {
    this.usable()
    const q = sentProofQuery(channelKey, balanceHash)
    return this.read('sentProof', async (snapshot) => {
      const [row] = await this.db.getMany([sentProofKey(q.channelKey, q.hash)], { snapshot })
      return row ? decode<SentProofRecord>(row) : undefined
    })
  }

  async sentLocks(channelKey: string, nonce: bigint): Promise<SentLockRecord[]> {
    this.usable()
    const q = sentLocksQuery(channelKey, nonce)
    if (!q) return []
    return this.read('sentLocks', async (snapshot) => {
      const rows = await this.values<SentLockRecord>(sentLocksRange(q.channelKey, q.nonce), snapshot)
      return rows.filter((l) => l.channelKey === q.channelKey && lockAlive(l, q.nonce))
    })
  }

  async receivedMessage(channelKey: string, nonce: bigint): Promise<ReceivedRecord | undefined> {
    this.usable()
    const q = receivedQuery(channelKey, nonce)
    if (!q) return undefined
    return this.read('receivedMessage', async (snapshot) => {
      const [row] = await this.db.getMany([receivedKey(q.channelKey, q.nonce)], { snapshot })
      return row ? decode<ReceivedRecord>(row) : undefined
    })
  }

  async exportDump(options: DumpOptions = {}): Promise<StorageDump> {
    this.usable()
    const all = !options.recovery
    return this.read('exportDump', async (snapshot) => {
      const [meta, snap] = await this.db.getMany(all ? [META_KEY, SNAPSHOT_KEY] : [META_KEY], { snapshot })
      if (!meta) throw new StorageError('the store has no meta')
      return {
        format: 'sluice-dump',
        meta: decode<Meta>(meta),
        ...(snap ? { snapshot: decode<Snapshot>(snap) } : {}),
        changes: all ? await this.values({ ...prefixRange(CHANGES) }, snapshot) : [],
        events: all ? await this.values({ ...prefixRange(EVENTS) }, snapshot) : [],
        payments: all ? await this.values({ ...prefixRange(PAYMENTS) }, snapshot) : [],
        chainEvents: all ? await this.values({ ...prefixRange(CHAIN_EVENTS) }, snapshot) : [],
        outbox: await this.values({ ...prefixRange(OUTBOX) }, snapshot),
        transactions: await this.values({ ...prefixRange(TRANSACTIONS) }, snapshot),
        sentProofs: all ? await this.values({ ...prefixRange(SENT_PROOFS) }, snapshot) : [],
        sentLocks: all ? await this.values({ ...prefixRange(SENT_LOCKS) }, snapshot) : [],
        // Key order (UTF-8 bytes, `!` after the channel key) is not string order for every channel key: sort.
        received: all ? (await this.values<ReceivedRecord>({ ...prefixRange(RECEIVED) }, snapshot)).sort(byReceivedKey) : [],
        chainTransactions: all ? await this.values({ ...prefixRange(CHAIN_TRANSACTIONS) }, snapshot) : [],
      }
    })
  }

  async importDump(dump: StorageDump): Promise<void> {
    this.usable()
    await this.#work.write(async () => {
      const db = this.db
      const [snap] = await db.getMany([SNAPSHOT_KEY])
      const progress = progressOf(snap ? decode<Snapshot>(snap).seq : undefined, await this.lastChangeSeq())
      const d = checkDump(dump, this.identity, { meta: this.meta, progress })
      // Everything goes and the dump comes in, in one synced batch: a crash leaves the old store or the new one.
      const ops: Op[] = []
      for await (const key of db.keys()) ops.push({ type: 'del', key })
      // The dump's rows and their index entries, as a commit of them would write them.
      ops.push(put(META_KEY, d.meta), ...plan(commitOfDump(d)).puts)
      await db.batch(ops, { sync: true })
      this.meta = d.meta
      // The log is the dump's now: read its end again at the next commit.
      this.#highestChange = null
    }, 'importDump')
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    // Let what was asked before the close finish, rather than fail it half-way.
    await this.#work.drain()
    await this.db.close()
  }

  private usable(): void {
    if (this.#closed) throw new StorageClosedError('the store is closed')
  }

  /** Runs several reads against one point-in-time view, so a commit in between cannot tear the result. */
  private async read<T>(what: string, reads: (snapshot: LevelSnapshot) => Promise<T>): Promise<T> {
    const snapshot = this.db.snapshot()
    try {
      return await this.#work.read(reads(snapshot), what)
    } finally {
      await snapshot.close()
    }
  }

  /** Keys of a range from `offset`, at most `limit`: a key-only scan, so rows before the page are not decoded. */
  private async keys(range: Range, offset: number, limit: number, snapshot: LevelSnapshot): Promise<string[]> {
    const keys = await this.db.keys({ ...range, limit: limit === Infinity ? -1 : offset + limit, snapshot }).all()
    return keys.slice(offset)
  }

  private async getMany<T>(keys: string[], snapshot: LevelSnapshot): Promise<T[]> {
    const values = await this.db.getMany(keys, { snapshot })
    return values.map((v, i) => {
      if (!v) throw new StorageError(`index entry without its row: ${keys[i]}`)
      return decode<T>(v)
    })
  }

  private async values<T>(range: Range, snapshot: LevelSnapshot): Promise<T[]> {
    return (await this.db.values({ ...range, snapshot }).all()).map((v) => decode<T>(v))
  }
}

type LevelSnapshot = ReturnType<LevelDb['snapshot']>

function hasCode(error: unknown, code: string): boolean {
  for (let e = error; e instanceof Error; e = e.cause) if ((e as { code?: unknown }).code === code) return true
  return false
}
