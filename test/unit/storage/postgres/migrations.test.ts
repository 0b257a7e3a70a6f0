import type pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { migrate } from '../../../../src/storage/postgres/migrations.ts'
import { openPool } from '../../../../src/storage/postgres/pool.ts'
import { startPostgres, type TestPostgres } from '../../../support/postgres.ts'

let server: TestPostgres
const pools: pg.Pool[] = []
let databases = 0

beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.stop()
})
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})))
})

async function pool(): Promise<pg.Pool> {
  const p = openPool(await server.createDatabase(`m${++databases}`), { name: 'migrations-test' })
  pools.push(p)
  return p
}

const STEPS = [
  { version: 1, sql: 'CREATE TABLE t_items (id int PRIMARY KEY)' },
  { version: 2, sql: 'ALTER TABLE t_items ADD COLUMN name text' },
]

describe('migrate', () => {
  test('runs the missing steps once, in order; a second start runs none', async () => {
    const p = await pool()
    expect(await migrate(p, 't', STEPS.slice(0, 1))).toBe(1)
    await p.query('INSERT INTO t_items VALUES (1)')
    expect(await migrate(p, 't', STEPS)).toBe(2)
    expect(await migrate(p, 't', STEPS)).toBe(2)
    expect((await p.query('SELECT id, name FROM t_items')).rows).toEqual([{ id: 1, name: null }])
    expect((await p.query("SELECT version FROM sluice_migrations WHERE component = 't' ORDER BY version")).rows.map((r) => r.version)).toEqual([1, 2])
  })

  test('instances started at once take turns: each step runs once', async () => {
    const p = await pool()
    const others = [0, 1, 2, 3].map(() => {
      const q = openPool(p.options.connectionString!, { name: 'migrations-test' })
      pools.push(q)
      return q
    })
    const results = await Promise.all(others.map((q) => migrate(q, 't', STEPS)))
    expect(results).toEqual([2, 2, 2, 2])
    expect((await p.query("SELECT count(*)::int AS n FROM sluice_migrations WHERE component = 't'")).rows[0].n).toBe(2)
  })

  test('a database a newer Sluice migrated is refused with STORAGE_VERSION, untouched', async () => {
    const p = await pool()
    await migrate(p, 't', STEPS)
    await expect(migrate(p, 't', STEPS.slice(0, 1))).rejects.toMatchObject({ code: 'STORAGE_VERSION' })
  })

  test('a failing step leaves nothing of itself, and says which step', async () => {
    const p = await pool()
    await expect(migrate(p, 't', [...STEPS, { version: 3, sql: 'ALTER TABLE t_items ADD COLUMN x int; SELECT * FROM nowhere' }])).rejects.toThrow(
      /migrating t to version 3 failed/,
    )
    const columns = (await p.query("SELECT column_name FROM information_schema.columns WHERE table_name = 't_items'")).rows.map((r) => r.column_name)
    expect(columns.sort()).toEqual(['id', 'name'])
  })
})
