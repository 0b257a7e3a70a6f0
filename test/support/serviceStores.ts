import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type pg from 'pg'
import { afterAll, beforeAll } from 'vitest'
import { openPool } from '../../src/storage/postgres/pool.ts'
import { startPostgres, type TestPostgres } from './postgres.ts'

/**
 * Both engines of a service's store (docs/decisions/0077) for one test file: LevelDB in a temporary directory, or
 * PostgreSQL in a new database on a server started for the file. Registers the file's hooks that start and clean up.
 */
export function serviceStoreEngines<S>(name: string, openers: { open(dataDir: string): Promise<S>; openPostgres(pool: pg.Pool): Promise<S> }) {
  const dirs: string[] = []
  const pools: pg.Pool[] = []
  let server: TestPostgres | undefined
  let databases = 0
  beforeAll(async () => {
    server = await startPostgres()
  }, 60_000)
  afterAll(async () => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    await Promise.all(pools.map((p) => p.end().catch(() => {})))
    await server?.stop()
  })
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), `sluice-${name}-store-`))
    dirs.push(dir)
    return dir
  }
  /** A pool of its own on `url`, as another process would have; ended with the file. */
  const pool = (url: string) => {
    const made = openPool(url, { name: `${name} store test` })
    pools.push(made)
    return made
  }
  /** A new database: its URL. */
  const database = () => {
    if (!server) throw new Error('the PostgreSQL server has not started (beforeAll)')
    return server.createDatabase(`${name}${++databases}`)
  }
  /** Each engine's way to a new store, and to the same store again (a reopen, or another instance on its database). */
  const engines = [
    {
      engine: 'LevelDB',
      place: async () => {
        const dir = tempDir()
        return () => openers.open(dir)
      },
    },
    {
      engine: 'PostgreSQL',
      place: async () => {
        const url = await database()
        return () => openers.openPostgres(pool(url))
      },
    },
  ]
  return { engines, tempDir, pool, database }
}
