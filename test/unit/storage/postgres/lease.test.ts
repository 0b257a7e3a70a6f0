import type pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { Lease } from '../../../../src/storage/postgres/lease.ts'
import { inTransaction, openPool } from '../../../../src/storage/postgres/pool.ts'
import { startPostgres, type TestPostgres } from '../../../support/postgres.ts'

let server: TestPostgres
const pools: pg.Pool[] = []
const leases: Lease[] = []
let databases = 0

beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.stop()
})
afterEach(async () => {
  await Promise.all(leases.splice(0).map((l) => l.stop()))
  await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})))
})

let lastDatabase = ''
async function database(): Promise<string> {
  lastDatabase = `lease${++databases}`
  return await server.createDatabase(lastDatabase)
}
function pool(url: string): pg.Pool {
  const p = openPool(url, { name: 'lease-test', max: 4 })
  pools.push(p)
  return p
}
async function lease(url: string, holder: string, durationMs = 600, p = pool(url)): Promise<Lease> {
  const l = await Lease.start(p, { name: 'hub', durationMs, holder })
  leases.push(l)
  return l
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('Lease', () => {
  test('one holder at a time: the first takes it, the second waits, and the database says who', async () => {
    const url = await database()
    const a = await lease(url, 'a')
    const b = await lease(url, 'b')
    expect(a.held).toBe(true)
    expect(b.held).toBe(false)
    await sleep(700) // past one duration: renewals keep a's
    expect(a.held).toBe(true)
    expect(b.held).toBe(false)
    const record = await Lease.current(pools[0]!, 'hub')
    expect(record?.holder).toBe('a')
    expect(record?.epoch).toBe(1n)
  })

  test('a holder that stops gives the lease up: the standby takes it at its next try, in a new epoch', async () => {
    const url = await database()
    const a = await lease(url, 'a')
    const b = await lease(url, 'b')
    const taken = b.waitUntilHeld()
    const started = performance.now()
    await a.stop()
    await taken
    expect(performance.now() - started).toBeLessThan(600)
    expect(b.epoch).toBe(2n)
    expect(a.held).toBe(false)
  })

  test('a holder that dies (its database connections gone) is replaced within twice the lease, and believes itself holder no longer than the database does', async () => {
    const url = await database()
    const aPool = pool(url)
    const a = await lease(url, 'a', 600, aPool)
    const b = await lease(url, 'b')
    const lost = new Promise<number>((resolve) => a.onChange((held) => !held && resolve(performance.now())))
    const taken = b.waitUntilHeld().then(() => performance.now())
    const died = performance.now()
    // What kill -9 leaves: no renewal reaches the database any more.
    await aPool.end()
    const [lostAt, takenAt] = await Promise.all([lost, taken])
    expect(takenAt - died).toBeLessThan(1200)
    // a stopped believing before b could take it.
    expect(lostAt).toBeLessThanOrEqual(takenAt)
  })

  test('a stall past the belief’s end (the process busy, a renewal unread) is no loss when the next renewal finds the same epoch', async () => {
    const url = await database()
    const a = await lease(url, 'a', 600)
    const changes: boolean[] = []
    a.onChange((held) => changes.push(held))
    // What a long synchronous task does: no timer and no answer is handled for longer than the lease.
    const until = performance.now() + 900
    while (performance.now() < until) {}
    await sleep(400)
    expect(changes).toEqual([])
    expect(a.held).toBe(true)
    expect(a.epoch).toBe(1n)
  })

  test('a stall during which another instance took the lease is a loss, told once the stall ends', async () => {
    const url = await database()
    const a = await lease(url, 'a', 600)
    const lost = new Promise<number>((resolve) => a.onChange((held) => !held && resolve(performance.now())))
    // Another instance holds the lease now (as once a's expiry passed by the database's clock), and a stalls.
    await pools[0]!.query("UPDATE sluice_leases SET holder = 'b', epoch = epoch + 1, expires_at = now() + interval '1 hour' WHERE name = 'hub'")
    const until = performance.now() + 900
    while (performance.now() < until) {}
    expect((await lost) - until).toBeLessThan(600)
    expect(a.held).toBe(false)
    expect(a.epoch).toBeUndefined()
  })

  test('check passes for the holder in its tenure, and fails for anyone else with LEASE_LOST', async () => {
    const url = await database()
    const a = await lease(url, 'a')
    const b = await lease(url, 'b')
    const p = pools[0]!
    await inTransaction(p, (c) => a.check(c))
    await expect(inTransaction(p, (c) => b.check(c))).rejects.toMatchObject({ code: 'LEASE_LOST' })
    // An older tenure of the same holder is refused too (its state may be stale).
    await expect(inTransaction(p, (c) => a.check(c, 0n))).rejects.toMatchObject({ code: 'LEASE_LOST' })
  })

  test('the lease taken away in the middle of a transaction: its check fails and nothing of it is stored', async () => {
    const url = await database()
    const a = await lease(url, 'a', 3_000)
    const p = pools[0]!
    await p.query('CREATE TABLE written (v int)')
    await expect(
      inTransaction(p, async (c) => {
        await c.query('INSERT INTO written VALUES (1)')
        // Another instance takes over (the row made to run out and taken, as a takeover does).
        await server.psql("UPDATE sluice_leases SET holder = 'b', epoch = epoch + 1, expires_at = now() + interval '1 hour'", lastDatabase)
        await a.check(c)
        await c.query('INSERT INTO written VALUES (2)')
      }),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' })
    expect((await p.query('SELECT count(*)::int AS n FROM written')).rows[0].n).toBe(0)
    expect(a.held).toBe(false)
  })

  test('a takeover waits for a transaction that checked the lease: the two never overlap', async () => {
    const url = await database()
    const a = await lease(url, 'a', 3_000)
    const p = pools[0]!
    const other = pool(url)
    let takenAt = 0
    let takeover: Promise<unknown> | undefined
    await inTransaction(p, async (c) => {
      await a.check(c)
      // Another instance takes the lease by force (as if it had run out) while this transaction is open.
      takeover = other
        .query("UPDATE sluice_leases SET holder = 'b', epoch = epoch + 1, expires_at = now() + interval '1 hour'")
        .then(() => (takenAt = performance.now()))
      await sleep(500)
      expect(takenAt).toBe(0)
    })
    const committedAt = performance.now()
    await takeover
    expect(takenAt).toBeGreaterThanOrEqual(committedAt)
    // And the next transaction of the old holder fails its check.
    await expect(inTransaction(p, (c) => a.check(c))).rejects.toMatchObject({ code: 'LEASE_LOST' })
  })
})
