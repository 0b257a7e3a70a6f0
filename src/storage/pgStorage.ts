import type pg from 'pg'
import type { Address, Hex } from 'viem'
import type { JournalEntry } from '../chain/transactionJournal.ts'
import { asStorageError } from './asStorageError.ts'
import { checkCommit } from './checkCommit.ts'
import { checkDump, commitOfDump, progressOf } from './dump.ts'
import { checkIdentity, sameIdentity } from './identity.ts'
import { jsonParse, jsonStringify } from './json.ts'
import { initialMeta, mergeMeta } from './meta.ts'
import { Lease } from './postgres/lease.ts'
import { migrate } from './postgres/migrations.ts'
import { NODE_MIGRATIONS, NODE_ROW_TABLES } from './postgres/nodeSchema.ts'
import { inTransaction } from './postgres/pool.ts'
import { blockSpan, chainEventMatches, checkPage } from './queries.ts'
import { byReceivedKey, receivedQuery } from './receivedRecords.ts'
import { hashKey, sentLocksQuery, sentProofQuery } from './sentRecords.ts'
import {
  STORAGE_SCHEMA_VERSION,
  LeaseLostError,
  StorageClosedError,
  StorageError,
  StorageLockedError,
  StorageVersionError,
  isSentPayment,
  type ChainEventQuery,
  type Commit,
  type DumpOptions,
  type Loaded,
  type Meta,
  type OutboxRecord,
  type PaymentQuery,
  type PaymentRecord,
  type ReceivedRecord,
  type SentLockRecord,
  type SentProofRecord,
  type Snapshot,
  type Storage,
  type StorageDump,
  type StorageIdentity,
  type StoredChainEvent,
  type StoredChange,
  type StoredEvent,
  type TransactionRecord,
} from './storage.ts'
import { StoreWork } from './storeWork.ts'
import { hasCode } from '../errors.ts'

// Node only (node-postgres): a node's store in PostgreSQL, for a hub with a hot standby (docs/decisions/0076).

/** The lease that makes one instance at a time the writer of a node's store: one per identity. */
export function nodeLeaseName(identity: StorageIdentity): string {
  return `node:${identity.chainId}:${identity.registry.toLowerCase()}:${identity.address.toLowerCase()}`
}

/** A node's store in PostgreSQL as a host hands it to launchNode: the pool, the lease taken, and where it is (for the log). */
export type PgNodeStore = { pool: pg.Pool; lease: Lease; where: string }

/** How the store gets its lease when it is not handed one already taken. */
export type PgLeaseSettings = {
  /** How long a renewal keeps the lease: a dead writer's standby takes over this long after its last renewal at most. */
  durationMs: number
  /** Wait until the lease is free (until the signal aborts, if one is given) rather than fail with StorageLockedError. */
  wait?: boolean | AbortSignal
  /** This instance's id in the lease (host/pid/random unless told). */
  holder?: string
  onError?(error: Error): void
}

export type OpenPgStorageOptions = {
  pool: pg.Pool
  /**
   * The lease of this node's store (name `nodeLeaseName(identity)`): one the caller started (a standby that waited
   * for it), or how to take it. The store stops it when it closes (giving it up, so a standby takes over at once).
   */
  lease: Lease | PgLeaseSettings
  /** Ends the pool when the store closes. */
  ownsPool?: boolean
}

/**
 * Opens the node's store in the PostgreSQL database behind `pool` once this instance holds the store's lease: where
 * LevelDB refuses a second process with its LOCK file, a second opener here is refused (StorageLockedError) or waits
 * for the lease, as asked. Every commit is one transaction that first checks the lease (Lease.check: the lease row
 * locked FOR SHARE, so a takeover waits for the transaction to end), so a writer that lost it writes nothing more:
 * the commit fails with LeaseLostError (code LEASE_LOST), and `onLeaseLost` listeners hear of it at once.
 */
export async function openPgStorage(identity: StorageIdentity, options: OpenPgStorageOptions): Promise<Storage> {
  checkIdentity(identity)
  const { pool } = options
  const name = nodeLeaseName(identity)
  let lease: Lease
  try {
    await migrate(pool, 'node', NODE_MIGRATIONS)
    lease = options.lease instanceof Lease ? options.lease : await Lease.start(pool, { name, ...leaseOptions(options.lease) })
  } catch (e) {
    if (options.ownsPool) await pool.end().catch(() => {})
    throw asStorageError(e, 'opening the store in PostgreSQL')
  }
  const fail = async (error: unknown): Promise<never> => {
    await lease.stop()
    if (options.ownsPool) await pool.end().catch(() => {})
    throw asStorageError(error, 'opening the store in PostgreSQL')
  }
  if (lease.name !== name) return fail(new StorageError(`the lease handed to the store is ${lease.name}, not ${name}`))
  if (!lease.held) {
    const wait = options.lease instanceof Lease ? true : options.lease.wait
    if (!wait) return fail(new StorageLockedError(`the store ${name} is held by another instance (its lease is taken)`))
    try {
      await lease.waitUntilHeld(wait instanceof AbortSignal ? wait : undefined)
    } catch (e) {
      return fail(e)
    }
  }
  try {
    const epoch = lease.epoch
    const { id, meta } = await inTransaction(
      pool,
      async (client) => {
        await lease.check(client, epoch)
        return openStore(client, identity)
      },
      'opening the store',
    )
    return new PgStorage(identity, pool, lease, id, meta, options.ownsPool === true)
  } catch (e) {
    return fail(e)
  }
}

function leaseOptions(settings: PgLeaseSettings): { durationMs: number; holder?: string; onError?(error: Error): void } {
  return {
    durationMs: settings.durationMs,
    ...(settings.holder !== undefined ? { holder: settings.holder } : {}),
    ...(settings.onError ? { onError: settings.onError } : {}),
  }
}

async function openStore(client: pg.ClientBase, identity: StorageIdentity): Promise<{ id: number; meta: Meta }> {
  const key = [identity.chainId.toString(), identity.registry.toLowerCase(), identity.address.toLowerCase()]
  await client.query(
    'INSERT INTO node_stores (chain_id, registry, address, meta) VALUES ($1, $2, $3, $4) ON CONFLICT (chain_id, registry, address) DO NOTHING',
    [...key, jsonStringify(initialMeta(identity))],
  )
  const { rows } = await client.query<{ id: number; meta: string }>(
    'SELECT id, meta FROM node_stores WHERE chain_id = $1 AND registry = $2 AND address = $3',
    key,
  )
  const row = rows[0]
  if (!row) throw new StorageError('the store row vanished as it was created')
  const meta = jsonParse(row.meta) as Meta
  if (!sameIdentity(meta, identity))
    throw new StorageError(`the store row ${row.id} belongs to another node (${meta.chainId}, ${meta.registry}, ${meta.address})`)
  if (meta.schemaVersion > STORAGE_SCHEMA_VERSION)
    throw new StorageVersionError(`the store has schema version ${meta.schemaVersion}, newer than ${STORAGE_SCHEMA_VERSION} (written by a newer Sluice)`)
  // Stores on PostgreSQL start at schema 5; a later schema brings its migration here (to the rows and to the meta).
  if (meta.schemaVersion < STORAGE_SCHEMA_VERSION) throw new StorageError(`the store has schema version ${meta.schemaVersion}, which no migration here reads`)
  return { id: row.id, meta }
}

/** Removes a (closed) node's store from the database: its rows and its own row. */
export async function deletePgStorage(pool: pg.Pool, identity: StorageIdentity): Promise<void> {
  await migrate(pool, 'node', NODE_MIGRATIONS)
  await inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ id: number }>('DELETE FROM node_stores WHERE chain_id = $1 AND registry = $2 AND address = $3 RETURNING id', [
      identity.chainId.toString(),
      identity.registry.toLowerCase(),
      identity.address.toLowerCase(),
    ])
    for (const { id } of rows) for (const table of NODE_ROW_TABLES) await client.query(`DELETE FROM ${table} WHERE store = $1`, [id])
  })
}

const encode = (value: unknown): string => jsonStringify(value)
const decode = <T>(text: string): T => jsonParse(text) as T
const lower = (s: string) => s.toLowerCase()

/** A table's rows to upsert: its columns (with their SQL array types), the key columns, and the rows' values. */
type Rows = { table: string; columns: [string, string][]; key: string[]; rows: unknown[][] }

/**
 * A commit encoded when it is called (so changing the batch's objects afterwards cannot reach the store, and a value
 * that cannot be encoded fails the call before anything is written), as the statements' parameters.
 */
type Planned = {
  relaxed: boolean
  changeSeqs: number[]
  prune?: number
  snapshot?: string
  upserts: Rows[]
  deletes: { table: string; column: string; type: string; keys: unknown[] }[]
  meta?: Partial<Meta>
}

/** Rows with the same key: the last one wins (as in one LevelDB batch), and each key is written once. */
function lastByKey(rows: unknown[][], keyColumns: number): unknown[][] {
  const byKey = new Map<string, unknown[]>()
  for (const row of rows) {
    const key = JSON.stringify(row.slice(0, keyColumns))
    byKey.delete(key)
    byKey.set(key, row)
  }
  return [...byKey.values()]
}

function plan(batch: Commit): Planned {
  const prune = batch.pruneChangesUpTo
  const upserts: Rows[] = []
  const add = (table: string, columns: [string, string][], keyColumns: number, rows: unknown[][]) => {
    if (rows.length > 0) upserts.push({ table, columns, key: columns.slice(0, keyColumns).map(([c]) => c), rows: lastByKey(rows, keyColumns) })
  }
  const changes = (batch.changes ?? []).filter((c) => prune === undefined || c.seq > prune)
  add(
    'node_changes',
    [
      ['seq', 'bigint'],
      ['value', 'text'],
    ],
    1,
    changes.map((c) => [c.seq, encode(c)]),
  )
  add(
    'node_events',
    [
      ['seq', 'bigint'],
      ['value', 'text'],
    ],
    1,
    (batch.events ?? []).map((e) => [e.seq, encode(e)]),
  )
  add(
    'node_payments',
    [
      ['seq', 'bigint'],
      ['token', 'text'],
      ['partner', 'text'],
      ['sent', 'boolean'],
      ['identifier', 'numeric'],
      ['value', 'text'],
    ],
    1,
    (batch.payments ?? []).map((p) => [p.seq, lower(p.token), lower(p.partner), isSentPayment(p), identifierOf(p), encode(p)]),
  )
  add(
    'node_chain_events',
    [
      ['block', 'bigint'],
      ['log_index', 'integer'],
      ['address', 'text'],
      ['token_network', 'text'],
      ['channel_id', 'numeric'],
      ['value', 'text'],
    ],
    2,
    (batch.chainEvents ?? []).map((e) => [
      e.blockNumber.toString(),
      e.logIndex,
      lower(e.address),
      e.tokenNetwork === undefined ? null : lower(e.tokenNetwork),
      e.channelId === undefined ? null : e.channelId.toString(),
      encode(e),
    ]),
  )
  add(
    'node_outbox',
    [
      ['key', 'text'],
      ['value', 'text'],
    ],
    1,
    (batch.outbox?.put ?? []).map((r) => [r.key, encode(r)]),
  )
  add(
    'node_transactions',
    [
      ['key', 'text'],
      ['value', 'text'],
    ],
    1,
    (batch.transactions?.put ?? []).map((r) => [r.key, encode(r)]),
  )
  add(
    'node_sent_proofs',
    [
      ['channel_key', 'text'],
      ['balance_hash', 'text'],
      ['value', 'text'],
    ],
    2,
    (batch.sentProofs ?? []).map((p) => [p.channelKey, hashKey(p.balanceHash), encode(p)]),
  )
  add(
    'node_sent_locks',
    [
      ['channel_key', 'text'],
      ['added_nonce', 'numeric'],
      ['secrethash', 'text'],
      ['removed_nonce', 'numeric'],
      ['value', 'text'],
    ],
    3,
    (batch.sentLocks ?? []).map((l) => [l.channelKey, l.addedNonce.toString(), hashKey(l.secrethash), l.removedNonce?.toString() ?? null, encode(l)]),
  )
  add(
    'node_received',
    [
      ['channel_key', 'text'],
      ['nonce', 'numeric'],
      ['value', 'text'],
    ],
    2,
    (batch.received ?? []).map((r) => [r.channelKey, r.nonce.toString(), encode(r)]),
  )
  add(
    'node_chain_transactions',
    [
      ['nonce', 'bigint'],
      ['value', 'text'],
    ],
    1,
    (batch.chainTransactions?.put ?? []).map((e) => [e.nonce, encode(e)]),
  )
  const deletes: Planned['deletes'] = []
  if (batch.outbox?.delete?.length) deletes.push({ table: 'node_outbox', column: 'key', type: 'text', keys: [...batch.outbox.delete] })
  if (batch.transactions?.delete?.length) deletes.push({ table: 'node_transactions', column: 'key', type: 'text', keys: [...batch.transactions.delete] })
  if (batch.chainTransactions?.delete?.length)
    deletes.push({ table: 'node_chain_transactions', column: 'nonce', type: 'bigint', keys: [...batch.chainTransactions.delete] })
  return {
    relaxed: batch.relaxed === true,
    changeSeqs: (batch.changes ?? []).map((c) => c.seq),
    ...(prune !== undefined ? { prune } : {}),
    ...(batch.snapshot ? { snapshot: encode(batch.snapshot) } : {}),
    upserts,
    deletes,
    // Encoded and decoded: a copy, and a value JSON cannot hold fails here.
    ...(batch.meta ? { meta: decode<Partial<Meta>>(encode(batch.meta)) } : {}),
  }
}

const identifierOf = (p: PaymentRecord): string => (typeof p.identifier === 'bigint' && p.identifier >= 0n ? p.identifier.toString() : '0')

/** One statement for all of a table's rows: `INSERT ... SELECT FROM unnest(arrays) ON CONFLICT (key) DO UPDATE`. */
async function upsert(client: pg.ClientBase, store: number, { table, columns, key, rows }: Rows): Promise<void> {
  const names = columns.map(([c]) => c)
  const arrays = columns.map((_, i) => rows.map((row) => row[i]))
  const unnest = columns.map(([, type], i) => `$${i + 2}::${type}[]`).join(', ')
  const set = names.filter((c) => !key.includes(c)).map((c) => `${c} = EXCLUDED.${c}`)
  await client.query(
    `INSERT INTO ${table} (store, ${names.join(', ')}) SELECT $1, * FROM unnest(${unnest})
     ON CONFLICT (store, ${key.join(', ')}) DO UPDATE SET ${set.join(', ')}`,
    [store, ...arrays],
  )
}

type ReadClient = pg.ClientBase

class PgStorage implements Storage {
  #closed = false
  #lost: LeaseLostError | undefined
  // Writes run one at a time, in the order they were asked.
  readonly #work = new StoreWork()
  readonly #lostListeners = new Set<(error: LeaseLostError) => void>()
  readonly #offLease: () => void
  /** The tenure this store was opened in: a commit in any other (the lease lost and taken again) is refused. */
  readonly #epoch: bigint | undefined

  constructor(
    private readonly identity: StorageIdentity,
    private readonly pool: pg.Pool,
    readonly lease: Lease,
    private readonly store: number,
    private meta: Meta,
    private readonly ownsPool: boolean,
  ) {
    this.#epoch = lease.epoch
    this.#offLease = lease.onChange((held) => {
      if (!held && !this.#closed) this.lost(new LeaseLostError(`this instance lost the lease ${lease.name}: another may have taken over the store`))
    })
  }

  /** Tells `listener` once, at once, when this instance lost the store's lease: it must stop signing and sending. */
  onLeaseLost(listener: (error: LeaseLostError) => void): () => void {
    if (this.#lost) {
      const lost = this.#lost
      queueMicrotask(() => listener(lost))
    }
    this.#lostListeners.add(listener)
    return () => this.#lostListeners.delete(listener)
  }

  private lost(error: LeaseLostError): void {
    if (this.#lost) return
    this.#lost = error
    for (const listener of this.#lostListeners) listener(error)
  }

  async commit(batch: Commit): Promise<void> {
    this.usable()
    checkCommit(batch, this.identity)
    let planned: Planned
    try {
      planned = plan(batch)
    } catch (e) {
      throw asStorageError(e, 'commit')
    }
    await this.#work.write(() => this.write(planned), 'commit')
  }

  private async write(planned: Planned): Promise<void> {
    if (this.#lost) throw this.#lost
    const store = this.store
    const meta = mergeMeta(this.meta, planned.meta)
    try {
      await inTransaction(
        this.pool,
        async (client) => {
          // First: no write of an instance that does not hold the lease, and no takeover until this one ends.
          await this.lease.check(client, this.#epoch)
          if (planned.relaxed) await client.query('SET LOCAL synchronous_commit = off')
          if (planned.changeSeqs.length > 0) {
            const { rows } = await client.query<{ seq: string }>('SELECT seq FROM node_changes WHERE store = $1 AND seq = ANY($2::bigint[]) LIMIT 1', [
              store,
              planned.changeSeqs,
            ])
            if (rows[0]) throw new StorageError(`change ${rows[0].seq} is already stored (the log is append-only)`)
          }
          for (const rows of planned.upserts) await upsert(client, store, rows)
          if (planned.prune !== undefined) await client.query('DELETE FROM node_changes WHERE store = $1 AND seq <= $2', [store, planned.prune])
          for (const d of planned.deletes) await client.query(`DELETE FROM ${d.table} WHERE store = $1 AND ${d.column} = ANY($2::${d.type}[])`, [store, d.keys])
          if (planned.snapshot !== undefined || planned.meta)
            await client.query('UPDATE node_stores SET meta = $2, snapshot = coalesce($3, snapshot) WHERE id = $1', [
              store,
              encode(meta),
              planned.snapshot ?? null,
            ])
        },
        'a commit',
      )
    } catch (e) {
      if (hasCode(e, 'LEASE_LOST')) this.lost(e as LeaseLostError)
      throw e
    }
    this.meta = meta
  }

  async load(): Promise<Loaded> {
    this.usable()
    return this.read('load', async (client) => {
      const { meta, snapshot } = await this.storeRow(client, true)
      const { rows: changes } = await client.query<{ value: string }>('SELECT value FROM node_changes WHERE store = $1 AND seq > $2 ORDER BY seq', [
        this.store,
        snapshot?.seq ?? -1,
      ])
      return {
        meta,
        ...(snapshot ? { snapshot } : {}),
        changes: changes.map((r) => decode<StoredChange>(r.value)),
        outbox: await this.values<OutboxRecord>(client, 'node_outbox'),
        transactions: await this.values<TransactionRecord>(client, 'node_transactions'),
        chainTransactions: await this.values<JournalEntry>(client, 'node_chain_transactions', 'nonce'),
      }
    })
  }

  async payments(query: PaymentQuery): Promise<PaymentRecord[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    if (limit === 0) return []
    const where = ['store = $1']
    const params: unknown[] = [this.store]
    if (query.token !== undefined) where.push(`token = $${params.push(lower(query.token))}`)
    if (query.partner !== undefined) where.push(`partner = $${params.push(lower(query.partner))}`)
    const page = `OFFSET $${params.push(offset)} LIMIT $${params.push(limit === Infinity ? null : limit)}`
    return this.read('payments', (client) =>
      this.decoded<PaymentRecord>(client, `SELECT value FROM node_payments WHERE ${where.join(' AND ')} ORDER BY seq ${page}`, params),
    )
  }

  async sentPayment(target: Address, identifier: bigint): Promise<PaymentRecord | undefined> {
    this.usable()
    if (typeof identifier !== 'bigint') throw new StorageError(`the identifier must be a bigint, not ${typeof identifier}`)
    if (identifier < 0n) return undefined
    return this.read('sentPayment', async (client) => {
      const [row] = await this.decoded<PaymentRecord>(
        client,
        'SELECT value FROM node_payments WHERE store = $1 AND sent AND partner = $2 AND identifier = $3 ORDER BY seq DESC LIMIT 1',
        [this.store, lower(target), identifier.toString()],
      )
      return row
    })
  }

  async events(query: { limit?: number; offset?: number }): Promise<StoredEvent[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    if (limit === 0) return []
    return this.read('events', (client) =>
      this.decoded<StoredEvent>(client, 'SELECT value FROM node_events WHERE store = $1 ORDER BY seq OFFSET $2 LIMIT $3', [
        this.store,
        offset,
        limit === Infinity ? null : limit,
      ]),
    )
  }

  async chainEvents(query: ChainEventQuery): Promise<StoredChainEvent[]> {
    this.usable()
    const span = blockSpan(query)
    if (!span) return []
    const where = ['store = $1', 'block >= $2', 'block <= $3']
    const params: unknown[] = [this.store, span.from, span.to]
    if (query.address !== undefined) where.push(`address = $${params.push(lower(query.address))}`)
    if (query.tokenNetwork !== undefined) where.push(`token_network = $${params.push(lower(query.tokenNetwork))}`)
    if (query.channelId !== undefined) where.push(`channel_id = $${params.push(String(query.channelId))}`)
    return this.read('chainEvents', async (client) => {
      const rows = await this.decoded<StoredChainEvent>(
        client,
        `SELECT value FROM node_chain_events WHERE ${where.join(' AND ')} ORDER BY block, log_index`,
        params,
      )
      return rows.filter((e) => chainEventMatches(e, query))
    })
  }

  async sentProof(channelKey: string, balanceHash: Hex): Promise<SentProofRecord | undefined> {
    this.usable()
    const q = sentProofQuery(channelKey, balanceHash)
    return this.read('sentProof', async (client) => {
      const [row] = await this.decoded<SentProofRecord>(
        client,
        'SELECT value FROM node_sent_proofs WHERE store = $1 AND channel_key = $2 AND balance_hash = $3',
        [this.store, q.channelKey, q.hash],
      )
      return row
    })
  }

  async sentLocks(channelKey: string, nonce: bigint): Promise<SentLockRecord[]> {
    this.usable()
    const q = sentLocksQuery(channelKey, nonce)
    if (!q) return []
    return this.read('sentLocks', (client) =>
      this.decoded<SentLockRecord>(
        client,
        `SELECT value FROM node_sent_locks WHERE store = $1 AND channel_key = $2 AND added_nonce <= $3 AND (removed_nonce IS NULL OR removed_nonce > $3)
         ORDER BY added_nonce, secrethash COLLATE "C"`,
        [this.store, q.channelKey, q.nonce.toString()],
      ),
    )
  }

  async receivedMessage(channelKey: string, nonce: bigint): Promise<ReceivedRecord | undefined> {
    this.usable()
    const q = receivedQuery(channelKey, nonce)
    if (!q) return undefined
    return this.read('receivedMessage', async (client) => {
      const [row] = await this.decoded<ReceivedRecord>(client, 'SELECT value FROM node_received WHERE store = $1 AND channel_key = $2 AND nonce = $3', [
        this.store,
        q.channelKey,
        q.nonce.toString(),
      ])
      return row
    })
  }

  async exportDump(options: DumpOptions = {}): Promise<StorageDump> {
    this.usable()
    const all = !options.recovery
    return this.read('exportDump', async (client) => {
      const { meta, snapshot } = await this.storeRow(client, all)
      return {
        format: 'sluice-dump',
        meta,
        ...(snapshot ? { snapshot } : {}),
        changes: all ? await this.values<StoredChange>(client, 'node_changes', 'seq') : [],
        events: all ? await this.values<StoredEvent>(client, 'node_events', 'seq') : [],
        payments: all ? await this.values<PaymentRecord>(client, 'node_payments', 'seq') : [],
        chainEvents: all ? await this.values<StoredChainEvent>(client, 'node_chain_events', 'block, log_index') : [],
        outbox: await this.values<OutboxRecord>(client, 'node_outbox'),
        transactions: await this.values<TransactionRecord>(client, 'node_transactions'),
        sentProofs: all ? await this.values<SentProofRecord>(client, 'node_sent_proofs') : [],
        sentLocks: all ? await this.values<SentLockRecord>(client, 'node_sent_locks', 'channel_key, added_nonce, secrethash COLLATE "C"') : [],
        // The dump's order is JavaScript's string order of the channel keys (UTF-16), which no collation gives: sort.
        received: all ? (await this.values<ReceivedRecord>(client, 'node_received')).sort(byReceivedKey) : [],
        chainTransactions: all ? await this.values<JournalEntry>(client, 'node_chain_transactions', 'nonce') : [],
      }
    })
  }

  async importDump(dump: StorageDump): Promise<void> {
    this.usable()
    await this.#work.write(async () => {
      if (this.#lost) throw this.#lost
      const store = this.store
      let imported: Meta | undefined
      try {
        await inTransaction(
          this.pool,
          async (client) => {
            await this.lease.check(client, this.#epoch)
            const { snapshot } = await this.storeRow(client, true)
            const { rows } = await client.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM node_changes WHERE store = $1', [store])
            const last = rows[0]?.seq
            const d = checkDump(dump, this.identity, { meta: this.meta, progress: progressOf(snapshot?.seq, last == null ? undefined : Number(last)) })
            // Encoded before anything is deleted: a dump holding a value that cannot be stored changes nothing.
            const planned = plan(commitOfDump(d))
            // Everything goes and the dump comes in, in one transaction: the old store or the new one.
            for (const table of NODE_ROW_TABLES) await client.query(`DELETE FROM ${table} WHERE store = $1`, [store])
            for (const rows of planned.upserts) await upsert(client, store, rows)
            await client.query('UPDATE node_stores SET meta = $2, snapshot = $3 WHERE id = $1', [store, encode(d.meta), planned.snapshot ?? null])
            imported = d.meta
          },
          'importDump',
        )
      } catch (e) {
        if (hasCode(e, 'LEASE_LOST')) this.lost(e as LeaseLostError)
        throw e
      }
      if (imported) this.meta = imported
    }, 'importDump')
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#offLease()
    // Let what was asked before the close finish, rather than fail it half-way.
    await this.#work.drain()
    // Given up, so that a standby takes the store over at once rather than when the lease runs out.
    await this.lease.stop()
    if (this.ownsPool) await this.pool.end().catch(() => {})
  }

  private usable(): void {
    if (this.#closed) throw new StorageClosedError('the store is closed')
  }

  /** Runs several reads in one read-only transaction that sees one snapshot, so a commit in between cannot tear the result. */
  private async read<T>(what: string, reads: (client: ReadClient) => Promise<T>): Promise<T> {
    const work = (async () => {
      let client: pg.PoolClient
      try {
        client = await this.pool.connect()
      } catch (e) {
        throw asStorageError(e, `connecting to the database for ${what}`)
      }
      let broken: Error | undefined
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
        const result = await reads(client)
        await client.query('COMMIT')
        return result
      } catch (e) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError))
        throw e
      } finally {
        client.release(broken ?? false)
      }
    })()
    return this.#work.read(work, what)
  }

  private async storeRow(client: ReadClient, withSnapshot: boolean): Promise<{ meta: Meta; snapshot?: Snapshot }> {
    const { rows } = await client.query<{ meta: string; snapshot: string | null }>(
      `SELECT meta, ${withSnapshot ? 'snapshot' : 'NULL AS snapshot'} FROM node_stores WHERE id = $1`,
      [this.store],
    )
    const row = rows[0]
    if (!row) throw new StorageError('the store has no meta (its row was deleted)')
    return { meta: decode<Meta>(row.meta), ...(row.snapshot !== null ? { snapshot: decode<Snapshot>(row.snapshot) } : {}) }
  }

  private async decoded<T>(client: ReadClient, sql: string, params: unknown[]): Promise<T[]> {
    const { rows } = await client.query<{ value: string }>(sql, params)
    return rows.map((r) => decode<T>(r.value))
  }

  private values<T>(client: ReadClient, table: string, orderBy?: string): Promise<T[]> {
    return this.decoded<T>(client, `SELECT value FROM ${table} WHERE store = $1${orderBy ? ` ORDER BY ${orderBy}` : ''}`, [this.store])
  }
}

/** The store's lease, for a host that shows whether it is held (a metrics gauge, /status). */
export function leaseOf(storage: Storage): Lease | undefined {
  return storage instanceof PgStorage ? storage.lease : undefined
}
