import type pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { inTransaction, openPool, parseDatabaseUrl, redactDatabaseUrl } from '../../../../src/storage/postgres/pool.ts'
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

async function pool(options: { statementTimeoutMs?: number } = {}): Promise<pg.Pool> {
  const p = openPool(await server.createDatabase(`p${++databases}`), { name: 'pool-test', ...options })
  pools.push(p)
  return p
}

describe('the pool', () => {
  test('a statement running past its timeout is cancelled by the server: nothing hangs', async () => {
    const p = await pool({ statementTimeoutMs: 300 })
    const started = performance.now()
    await expect(p.query('SELECT pg_sleep(5)')).rejects.toMatchObject({ code: '57014' })
    expect(performance.now() - started).toBeLessThan(3_000)
  })

  test('inTransaction commits what resolves and rolls back what throws', async () => {
    const p = await pool()
    await p.query('CREATE TABLE t (v int)')
    await inTransaction(p, (c) => c.query('INSERT INTO t VALUES (1)'))
    await expect(
      inTransaction(p, async (c) => {
        await c.query('INSERT INTO t VALUES (2)')
        throw new Error('no')
      }),
    ).rejects.toThrow('no')
    expect((await p.query('SELECT v FROM t')).rows).toEqual([{ v: 1 }])
  })

  test('database URLs: postgres:// and postgresql:// are taken, their password never shown', () => {
    expect(parseDatabaseUrl('postgres://u:secret@db.example:5432/sluice')).toBeDefined()
    expect(parseDatabaseUrl('postgresql://db/sluice')).toBeDefined()
    for (const bad of ['mysql://db/x', 'db:5432', '', 'postgres://']) expect(parseDatabaseUrl(bad)).toBeUndefined()
    expect(redactDatabaseUrl('postgres://u:secret@db.example:5432/sluice')).not.toContain('secret')
  })
})
