import type pg from 'pg'
import { StorageError, StorageVersionError } from '../storage.ts'

/** One step of a component's schema: versions count up from 1, and a version once released never changes. */
export type Migration = { version: number; sql: string }

// One advisory lock key for every migration: instances starting together take turns (a 64-bit key, 'sluicemg').
const MIGRATION_LOCK = 0x736c7569636d67n

/**
 * Brings `component`'s tables (`node`, `monitor`, `pfs`, `backup`) to the newest of `migrations`, each missing step
 * in a transaction of its own that also records it, under an advisory lock, so that several instances started at
 * once run each step once. A database whose `component` is past this code's newest step was written by a newer
 * Sluice: StorageVersionError, and nothing is touched.
 */
export async function migrate(pool: pg.Pool, component: string, migrations: readonly Migration[]): Promise<number> {
  const sorted = [...migrations].sort((a, b) => a.version - b.version)
  sorted.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`the migrations of ${component} must count up from 1 (found ${m.version} at ${i + 1})`)
  })
  const newest = sorted.length
  const client = await pool.connect().catch((e) => {
    throw new StorageError(`connecting to the database to migrate ${component} failed: ${(e as Error).message}`, { cause: e })
  })
  try {
    // A session lock (not a transaction's): held across the steps, each of which commits on its own.
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK.toString()])
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS sluice_migrations (
        component text NOT NULL, version integer NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (component, version))`)
      const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM sluice_migrations WHERE component = $1', [component])
      const current = rows[0]?.version ?? 0
      if (current > newest) throw new StorageVersionError(`the database's ${component} tables have version ${current}, newer than this code's ${newest}`)
      for (const m of sorted.slice(current)) {
        await client.query('BEGIN')
        try {
          await client.query(m.sql)
          await client.query('INSERT INTO sluice_migrations (component, version) VALUES ($1, $2)', [component, m.version])
          await client.query('COMMIT')
        } catch (e) {
          await client.query('ROLLBACK').catch(() => {})
          throw new StorageError(`migrating ${component} to version ${m.version} failed: ${(e as Error).message}`, { cause: e })
        }
      }
      return newest
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK.toString()]).catch(() => {})
    }
  } finally {
    client.release()
  }
}
