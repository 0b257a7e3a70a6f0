import type pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { openPool, type PoolOptions } from '../../src/storage/postgres/pool.ts'
import { startPostgres, type TestPostgres } from './postgres.ts'

/**
 * A test file's PostgreSQL server, started before its tests, with new databases named `name1`, `name2`… and pools on
 * them, all ended with the server when the file is done. Call it at the top of the file, before the file's own
 * afterAll: vitest runs after-hooks in reverse (sequence.hooks 'stack'), so the file's hook closes what uses the
 * pools first.
 */
export function testDatabases(name: string) {
  const pools: pg.Pool[] = []
  let started: TestPostgres | undefined
  let databases = 0
  beforeAll(async () => {
    started = await startPostgres()
  }, 60_000)
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end().catch(() => {})))
    await started?.stop()
  })
  const server = () => {
    if (!started) throw new Error('the PostgreSQL server has not started (beforeAll)')
    return started
  }
  return {
    server,
    /** A new database: its URL. */
    database: () => server().createDatabase(`${name}${++databases}`),
    /** The newest database's name: for `psql` on it. */
    newestDatabase: () => `${name}${databases}`,
    /** A pool of its own on `url`, as another process would have; ended with the file. */
    pool: (url: string, options: Omit<PoolOptions, 'name'> = {}) => {
      const made = openPool(url, { name: `${name} test`, ...options })
      pools.push(made)
      return made
    },
  }
}
