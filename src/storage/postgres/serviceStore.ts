import type pg from 'pg'
import { asStorageError } from '../asStorageError.ts'
import { decode, encode } from '../serviceLevelStore.ts'
import { checkServiceStoreMeta, type BatchOp, type KvChange, type OpenServiceStoreParameters, type ServiceKv, type ServiceStoreMeta } from '../serviceStore.ts'
import type { Lease } from './lease.ts'
import { migrate } from './migrations.ts'
import { inTransaction } from './pool.ts'
import { hasCode } from '../../errors.ts'

// Node only. A service store (the monitoring service's, the pathfinding service's) on PostgreSQL, shared by several
// instances of the service (docs/decisions/0077).

/** The components whose store this engine holds: the table is `<component>_kv`. */
export type ServiceKvComponent = 'monitor' | 'pfs'

const migrations = (component: ServiceKvComponent) => [
  {
    version: 1,
    // The keys and values of the LevelDB store, each with the number of the commit that last wrote it; a deletion stays
    // as a row without a value (a tombstone), so that an instance catching up sees it.
    sql: `CREATE SEQUENCE ${component}_kv_seq;
      CREATE TABLE ${component}_kv (key text PRIMARY KEY, value bytea, seq bigint NOT NULL);
      CREATE INDEX ${component}_kv_by_seq ON ${component}_kv (seq);`,
  },
  {
    version: 2,
    // Tombstones are pruned once every instance should have seen them; `below` says up to where, so that an instance
    // further behind reads the whole table again rather than miss a deletion.
    sql: `CREATE TABLE ${component}_kv_pruned (id smallint PRIMARY KEY CHECK (id = 1), below bigint NOT NULL);
      INSERT INTO ${component}_kv_pruned VALUES (1, 0);`,
  },
]

/** How many batches a tombstone outlives before it may be pruned, and how often (in batches) the pruning runs. */
export const TOMBSTONES = { keep: 1_024, pruneEvery: 256 }

export type PostgresServiceKvOptions = {
  component: ServiceKvComponent
  /** The service's lease: a batch's session says whether this instance holds it (checked in its transaction). */
  lease?: Lease | undefined
  /** Milliseconds between looks for other instances' writes when no notification came (1000 unless told). */
  pollMs?: number
  /** A look for other instances' writes that failed (the database unreachable): tried again at the next poll. */
  onError?(error: Error): void
  /** Tombstones' pruning (tests make it quick): TOMBSTONES unless told. */
  tombstones?: { keep: number; pruneEvery: number }
  /**
   * The key prefix of records no instance keeps in memory: read from the table when asked, and deleted by
   * `clearRange`, which leaves no tombstones (the pathfinding service's routes answered). They are not followed.
   */
  untracked?: string
}

type Row = { key: string; value: Buffer | null; seq: string }
/** A row of the table, or (`key` null) the horizon row: the seq below which tombstones were pruned. */
type HorizonRow = { key: string | null; value: Buffer | null; seq: string }

/**
 * A service store's engine on PostgreSQL: one table of keys and values (`<component>_kv`). Every batch is one
 * transaction that first takes the store's advisory lock (`pg_advisory_xact_lock`), so that the instances' writes
 * are serialized; it then catches the memory up with what the others wrote since (the rows of a higher `seq`), checks
 * the lease, lets the steps run, writes their rows under one new `seq`, and notifies the others (NOTIFY with the seq).
 * Under that lock the numbers are committed in order, so "every row above the last seq seen" misses nothing. Between
 * batches the others' writes arrive by LISTEN, and by a poll should a notification be lost.
 */
export class PostgresServiceKv implements ServiceKv {
  readonly engine = 'postgres' as const
  private readonly table: string
  private readonly channel: string
  private readonly lockKey: string
  private lastSeen: bigint
  private readonly listeners: ((changes: KvChange[]) => void)[] = []
  /** Batches and catch-ups, one at a time: the memory changes in the order the rows were written. */
  private exclusive: Promise<unknown> = Promise.resolve()
  private listener: pg.PoolClient | undefined
  private releaseListener: ((error?: Error) => void) | undefined
  private pollTimer: ReturnType<typeof setInterval> | undefined
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined
  private closed = false
  private catchingUp: Promise<void> | undefined
  /**
   * The keys that hold a value as far as this instance has seen: after tombstones it had not seen were pruned, the
   * keys missing from the table are the deletions it missed.
   */
  private readonly liveKeys: Set<string>

  private constructor(
    private readonly pool: pg.Pool,
    private readonly options: PostgresServiceKvOptions,
    /** What the table held when opened (read once, for the store's load), and the highest seq in it. */
    private snapshot: Map<string, Uint8Array> | undefined,
    lastSeen: bigint,
  ) {
    this.table = `${options.component}_kv`
    this.channel = `sluice_${options.component}_kv`
    this.lockKey = this.table
    this.lastSeen = lastSeen
    this.liveKeys = new Set([...(snapshot?.keys() ?? [])].filter((key) => this.tracked(key)))
  }

  /** Whether this instance follows the key's record (in `liveKeys`, and handed to the store's listeners). */
  private tracked(key: string): boolean {
    return this.options.untracked === undefined || !key.startsWith(this.options.untracked)
  }

  /** Runs the migrations, then reads the whole table at once (one snapshot: what the store loads matches `seq`). */
  static async open(pool: pg.Pool, options: PostgresServiceKvOptions): Promise<PostgresServiceKv> {
    await migrate(pool, options.component, migrations(options.component))
    // The whole table (and the horizon) in one statement: one snapshot of it.
    const rows = await rowsAfterHorizon(pool, options.component, -1n)
    const snapshot = new Map<string, Uint8Array>()
    let lastSeen = 0n
    for (const row of rows) {
      if (row.key !== null && row.value) snapshot.set(row.key, new Uint8Array(row.value))
      if (BigInt(row.seq) > lastSeen) lastSeen = BigInt(row.seq)
    }
    return new PostgresServiceKv(pool, options, snapshot, lastSeen)
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    if (this.snapshot) return this.snapshot.get(key)
    const { rows } = await this.pool.query<Row>(`SELECT value FROM ${this.table} WHERE key = $1`, [key])
    return rows[0]?.value ? new Uint8Array(rows[0].value) : undefined
  }

  async *entries(prefix: string): AsyncIterable<[string, Uint8Array]> {
    if (this.snapshot) {
      const keys = [...this.snapshot.keys()].filter((k) => k.startsWith(prefix)).sort()
      for (const key of keys) yield [key, this.snapshot.get(key)!]
      return
    }
    // COLLATE "C": byte order, LevelDB's order of keys, whatever the database's collation.
    const { rows } = await this.pool.query<Row>(
      `SELECT key, value FROM ${this.table} WHERE starts_with(key, $1) AND value IS NOT NULL ORDER BY key COLLATE "C"`,
      [prefix],
    )
    for (const row of rows) yield [row.key, new Uint8Array(row.value!)]
  }

  /**
   * Deletes the records from `gte` up to `lt` at once, without tombstones: for records no instance keeps in memory
   * (the pathfinding service's routes answered, read from the table when asked).
   */
  async clearRange(gte: string, lt: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${this.table} WHERE key COLLATE "C" >= $1 AND key COLLATE "C" < $2`, [gte, lt])
  }

  /** A write outside a batch (the meta record at open): a batch of one. */
  async put(key: string, value: Uint8Array): Promise<void> {
    await this.commit(async ({ write }) => {
      await write([{ type: 'put', key, value }])
      return undefined
    })
  }

  /** Ends the store's load: reads go to the table from now on. */
  loaded(): void {
    this.snapshot = undefined
  }

  /** Follows the other instances' writes from now on (once the store listens to them). */
  private follow(): void {
    if (this.closed || this.pollTimer) return
    void this.listen()
    this.pollTimer = setInterval(() => void this.catchUp().catch((e: unknown) => this.options.onError?.(e as Error)), this.options.pollMs ?? 1_000)
    this.pollTimer.unref?.()
  }

  /** The store's memory follows the other instances' writes: from its first listener on, they are looked for. */
  onChanges(listener: (changes: KvChange[]) => void): void {
    this.listeners.push(listener)
    this.follow()
  }

  commit(body: Parameters<ServiceKv['commit']>[0]): Promise<void> {
    return this.exclusively(async () => {
      let after: (() => void) | undefined
      const written: [string, boolean][] = []
      await inTransaction(
        this.pool,
        async (client) => {
          await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [this.lockKey])
          this.apply(await this.rowsAfter(client))
          const leaseHeld = await this.leaseHeld(client)
          after = await body({ leaseHeld, write: async (ops) => void written.push(...(await this.write(client, ops))) })
        },
        `a batch of ${this.table}`,
      )
      this.follows(written)
      after?.()
    })
  }

  /**
   * Catches the memory up with the other instances' writes now (a takeover reads everything the last holder wrote
   * before it acts; the poll and the notifications call it too).
   */
  catchUp(): Promise<void> {
    // One look at a time; a call while one is under way waits for the next (which sees what the notification said).
    if (this.catchingUp) return this.catchingUp.then(() => this.catchUp())
    this.catchingUp = this.exclusively(async () => this.apply(await this.rowsAfter(this.pool))).finally(() => {
      this.catchingUp = undefined
    })
    return this.catchingUp
  }

  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.pollTimer)
    clearTimeout(this.reconnectTimer)
    await this.exclusive.catch(() => {})
    const listener = this.listener
    const release = this.releaseListener
    this.releaseListener = undefined
    if (listener && release) {
      await listener.query(`UNLISTEN ${this.channel}`).catch(() => {})
      release()
    }
  }

  private async leaseHeld(client: pg.ClientBase): Promise<boolean> {
    const lease = this.options.lease
    if (!lease?.held) return false
    try {
      await lease.check(client)
      return true
    } catch (e) {
      if (hasCode(e, 'LEASE_LOST')) return false
      throw e
    }
  }

  private rowsAfter(client: pg.ClientBase | pg.Pool): Promise<HorizonRow[]> {
    return rowsAfterHorizon(client, this.options.component, this.lastSeen)
  }

  /**
   * Hands the rows not seen yet to the store, in the order they were written. When tombstones this instance had
   * not seen were pruned meanwhile (the horizon above what it saw), the rows are the whole table: the keys it holds
   * that are missing there were deleted, and are handed on as deletions too.
   */
  private apply(rows: HorizonRow[]): void {
    const horizon = rows.find((row) => row.key === null)
    const wholeTable = horizon !== undefined && BigInt(horizon.seq) > this.lastSeen
    const tableRows = rows.filter((row): row is Row => row.key !== null)
    const fresh = tableRows.filter((row) => BigInt(row.seq) > this.lastSeen)
    const changes: KvChange[] = fresh
      .filter((row) => this.tracked(row.key))
      .map((row) => ({ key: row.key, value: row.value ? new Uint8Array(row.value) : undefined }))
    if (wholeTable) {
      const present = new Set(tableRows.map((row) => row.key))
      for (const key of this.liveKeys) if (!present.has(key)) changes.push({ key, value: undefined })
    }
    const seen = [...tableRows.map((row) => BigInt(row.seq)), wholeTable ? BigInt(horizon.seq) : 0n]
    this.lastSeen = seen.reduce((max, seq) => (seq > max ? seq : max), this.lastSeen)
    if (changes.length === 0) return
    this.follows(changes.map(({ key, value }) => [key, value !== undefined]))
    // While the store loads (the meta record's write catches up too), the snapshot it reads follows as well.
    for (const { key, value } of changes) {
      if (value) this.snapshot?.set(key, value)
      else this.snapshot?.delete(key)
    }
    for (const listener of this.listeners) listener(changes)
  }

  private async write(client: pg.ClientBase, ops: BatchOp[]): Promise<[string, boolean][]> {
    // The last operation on a key wins, as in a LevelDB batch (one row can take one change per statement).
    const last = new Map<string, BatchOp>()
    for (const op of ops) last.set(op.key, op)
    const { rows } = await client.query<{ seq: string }>(`SELECT nextval('${this.table}_seq') AS seq`)
    const seq = rows[0]!.seq
    const keys = [...last.keys()]
    const values = [...last.values()].map((op) => (op.type === 'put' ? Buffer.from(op.value.buffer, op.value.byteOffset, op.value.byteLength) : null))
    await client.query(
      `INSERT INTO ${this.table} (key, value, seq) SELECT k, v, $3 FROM unnest($1::text[], $2::bytea[]) AS t(k, v)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, seq = EXCLUDED.seq`,
      [keys, values, seq],
    )
    await this.pruneTombstones(client, BigInt(seq))
    await client.query('SELECT pg_notify($1, $2)', [this.channel, seq])
    // Our own rows are in memory once the batch applies: the next catch-up starts after them (a seq rolled back is
    // never written: the lock makes seqs rise in commit order). The keys are followed once the batch commits.
    this.lastSeen = BigInt(seq)
    return [...last].map(([key, op]) => [key, op.type === 'put'])
  }

  /** Keys that now hold a value (true) or no longer do. */
  private follows(keys: [string, boolean][]): void {
    for (const [key, live] of keys) {
      if (!this.tracked(key)) continue
      if (live) this.liveKeys.add(key)
      else this.liveKeys.delete(key)
    }
  }

  /**
   * Every `pruneEvery` batches (whichever instance writes it, under the store's lock), the tombstones older than
   * `keep` batches go, and the horizon says so: an instance that had not seen them reads the table whole once.
   */
  private async pruneTombstones(client: pg.ClientBase, seq: bigint): Promise<void> {
    const { keep, pruneEvery } = this.options.tombstones ?? TOMBSTONES
    if (seq % BigInt(pruneEvery) !== 0n || seq <= BigInt(keep)) return
    const below = seq - BigInt(keep)
    await client.query(`DELETE FROM ${this.table} WHERE value IS NULL AND seq < $1`, [below.toString()])
    await client.query(`UPDATE ${this.table}_pruned SET below = GREATEST(below, $1)`, [below.toString()])
  }

  private exclusively<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.exclusive.then(fn, fn)
    this.exclusive = run.catch(() => {})
    return run
  }

  /** LISTEN on a connection of its own; a broken one is replaced a second later (the poll covers the gap). */
  private async listen(): Promise<void> {
    if (this.closed) return
    let client: pg.PoolClient | undefined
    let released = false
    // The connection goes back to the pool once, without our handlers: an error on it after that (the pool's
    // idle client, the server shut down) is the pool's, and a second release would throw out of an event handler.
    const release = (error?: Error): void => {
      if (!client || released) return
      released = true
      client.removeListener('notification', onNotification)
      client.removeListener('error', onError)
      if (this.listener === client) this.listener = undefined
      client.release(error)
    }
    const retry = (): void => {
      if (this.closed) return
      this.reconnectTimer = setTimeout(() => void this.listen(), 1_000)
      this.reconnectTimer.unref?.()
    }
    const onNotification = (): void => void this.catchUp().catch((e: unknown) => this.options.onError?.(e as Error))
    const onError = (error: Error): void => {
      if (released) return
      this.options.onError?.(asStorageError(error, `listening for ${this.table}`))
      release(error)
      retry()
    }
    try {
      client = await this.pool.connect()
      client.on('notification', onNotification)
      client.on('error', onError)
      await client.query(`LISTEN ${this.channel}`)
      if (this.closed) return release()
      this.listener = client
      this.releaseListener = release
    } catch (e) {
      if (released) return
      release(e as Error)
      this.options.onError?.(asStorageError(e, `listening for ${this.table}`))
      retry()
    }
  }
}

/**
 * The rows written after `lastSeen`, or the whole table when tombstones above `lastSeen` were pruned; and the horizon
 * as a row of its own (`key` null, `seq` the horizon). One statement, so one snapshot of both.
 */
async function rowsAfterHorizon(client: pg.ClientBase | pg.Pool, component: ServiceKvComponent, lastSeen: bigint): Promise<HorizonRow[]> {
  const table = `${component}_kv`
  const { rows } = await client.query<HorizonRow>(
    `WITH horizon AS (SELECT below FROM ${table}_pruned)
     SELECT NULL AS key, NULL AS value, below AS seq FROM horizon
     UNION ALL
     SELECT key, value, seq FROM ${table} WHERE seq > $1 OR (SELECT below FROM horizon) > $1
     ORDER BY seq`,
    [lastSeen.toString()],
  )
  return rows
}

/**
 * Opens a service's store on PostgreSQL (the tables made or brought up to date first): the `meta` check of
 * serviceStore.ts, then the store's load from one snapshot of the table; the other instances' writes are followed
 * once the store listens to them (`onChanges`).
 */
export async function openPostgresServiceStore<M extends ServiceStoreMeta, S>(
  pool: pg.Pool,
  options: PostgresServiceKvOptions,
  p: OpenServiceStoreParameters<M, S>,
): Promise<{ kv: PostgresServiceKv; loaded: S }> {
  const where = `${options.component}_kv`
  let kv: PostgresServiceKv | undefined
  try {
    kv = await PostgresServiceKv.open(pool, options)
    await checkServiceStoreMeta(kv, p, `in the table ${where}`, { encode, decode })
    const loaded = await p.load(kv)
    kv.loaded()
    return { kv, loaded }
  } catch (e) {
    await kv?.close().catch(() => {})
    throw asStorageError(e, `opening the table ${where}`)
  }
}
