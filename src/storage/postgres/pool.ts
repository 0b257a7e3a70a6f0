import pg from 'pg'
import { asStorageError } from '../asStorageError.ts'
import { StorageError } from '../storage.ts'

// Node only (node-postgres, docs/decisions/0075): the hub's store and the services' stores on PostgreSQL.

export type PoolOptions = {
  /** Shown in pg_stat_activity (application_name): which Sluice process holds a connection. */
  name: string
  /** Connections at most (10 unless told). */
  max?: number
  /** A connection not made in this time fails (10 s unless told). */
  connectTimeoutMs?: number
  /** A statement running longer is cancelled by the server (30 s unless told): nothing hangs. */
  statementTimeoutMs?: number
  /** Called when an idle connection breaks (the server restarted, the network cut): the next query reconnects. */
  onIdleError?(error: Error): void
}

/** A `postgres://` or `postgresql://` URL, or undefined: what a `--database` flag takes. */
export function parseDatabaseUrl(raw: string): string | undefined {
  try {
    const url = new URL(raw)
    return (url.protocol === 'postgres:' || url.protocol === 'postgresql:') && url.hostname !== '' ? raw : undefined
  } catch {
    return undefined
  }
}

/** The URL without its password: for logs and errors. */
export function redactDatabaseUrl(raw: string): string {
  try {
    const url = new URL(raw)
    if (url.password) url.password = '***'
    return url.toString()
  } catch {
    return '(a database URL)'
  }
}

/**
 * A pool of connections to the database at `url`. Every call across it ends: connections time out, statements are
 * cancelled by the server after `statementTimeoutMs`, and the client's own query timeout (a little longer) covers a
 * server that does not answer at all.
 */
export function openPool(url: string, options: PoolOptions): pg.Pool {
  const statementTimeoutMs = options.statementTimeoutMs ?? 30_000
  const pool = new pg.Pool({
    connectionString: url,
    application_name: options.name,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    statement_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + 5_000,
    idle_in_transaction_session_timeout: statementTimeoutMs * 2,
    keepAlive: true,
  })
  // An idle connection's error would otherwise be an uncaught 'error' event (node-postgres' documented pitfall).
  pool.on('error', (error) => options.onIdleError?.(error))
  return pool
}

/**
 * Runs `fn` in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws (its error is
 * thrown again). A connection that broke on the way is destroyed, not given back to the pool.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, what = 'a transaction'): Promise<T> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (e) {
    throw asStorageError(e, `connecting to the database for ${what}`)
  }
  let broken: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (e) {
    try {
      await client.query('ROLLBACK')
    } catch (rollbackError) {
      broken = rollbackError as Error
    }
    throw e
  } finally {
    client.release(broken ?? false)
  }
}

/** A PostgreSQL error's SQLSTATE code (`40001` serialization failure, `57014` query cancelled...), if it is one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/** Throws a StorageError naming the database (without its password) when it cannot be reached. */
export async function checkReachable(pool: pg.Pool, url: string): Promise<void> {
  try {
    await pool.query('SELECT 1')
  } catch (e) {
    throw new StorageError(`the database ${redactDatabaseUrl(url)} cannot be reached: ${(e as Error).message}`, { cause: e })
  }
}
