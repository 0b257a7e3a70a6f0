import type pg from 'pg'
import { tempDirs } from './tempDirs.ts'
import { testDatabases } from './testDatabases.ts'

/**
 * Both engines of a service's store (docs/decisions/0077) for one test file: LevelDB in a temporary directory, or
 * PostgreSQL in a new database on a server started for the file. Registers the file's hooks that start and clean up.
 */
export function serviceStoreEngines<S>(name: string, openers: { open(dataDir: string): Promise<S>; openPostgres(pool: pg.Pool): Promise<S> }) {
  const tempDir = tempDirs(`sluice-${name}-store-`)
  const { database, pool } = testDatabases(name)
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
