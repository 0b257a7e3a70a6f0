import type pg from 'pg'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { deletePgStorage, nodeLeaseName, openPgStorage } from '../../../src/storage/pgStorage.ts'
import { LeaseLostError, StorageError, StorageLockedError, type StorageIdentity } from '../../../src/storage/storage.ts'
import { openPool } from '../../../src/storage/postgres/pool.ts'
import { startPostgres, type TestPostgres } from '../../support/postgres.ts'
import { describeStorageContract } from './storageContract.ts'
import { change, newChannelKey, newIdentity, outbox, received } from './support/records.ts'

let server: TestPostgres
let pool: pg.Pool
beforeAll(async () => {
  server = await startPostgres()
  pool = openPool(await server.createDatabase('contract'), { name: 'pgStorage.test' })
}, 60_000)
afterAll(async () => {
  await pool?.end()
  await server?.stop()
})

describeStorageContract('PostgreSQL', {
  open: (identity) => openPgStorage(identity, { pool, lease: { durationMs: 3_000 } }),
  destroy: (identity) => deletePgStorage(pool, identity),
  singleInstance: true,
})

/** Another instance taking the lease of `identity`'s store, as Lease.start's upsert would once it ran out. */
const takeOver = (client: pg.ClientBase, identity: StorageIdentity) =>
  client.query(`UPDATE sluice_leases SET holder = 'thief', epoch = epoch + 1, expires_at = now() + interval '1 hour' WHERE name = $1`, [
    nodeLeaseName(identity),
  ])

test('a second opener is refused while the lease is held, or waits for it and takes over once the first closes', async () => {
  const identity = newIdentity()
  const first = await openPgStorage(identity, { pool, lease: { durationMs: 3_000 } })
  await first.commit({ changes: [change(1)] })
  await expect(openPgStorage(identity, { pool, lease: { durationMs: 3_000 } })).rejects.toBeInstanceOf(StorageLockedError)
  const waiting = openPgStorage(identity, { pool, lease: { durationMs: 900, wait: true } })
  await new Promise((r) => setTimeout(r, 500))
  await first.close()
  const second = await waiting
  expect((await second.load()).changes.map((c) => c.seq)).toEqual([1])
  await second.close()
})

test('a takeover waits for a commit that checked the lease; the next commit fails with LEASE_LOST, stores nothing, and onLeaseLost hears it', async () => {
  const identity = newIdentity()
  const storage = await openPgStorage(identity, { pool, lease: { durationMs: 3_000 } })
  const lost: Error[] = []
  storage.onLeaseLost!((error) => lost.push(error))
  await storage.commit({ changes: [change(1)], outbox: { put: [outbox('a')] } })
  const blocker = await pool.connect()
  const thief = await pool.connect()
  try {
    // The commit checks the lease (its row FOR SHARE), then waits on a table another transaction locks.
    await blocker.query('BEGIN')
    await blocker.query('LOCK TABLE node_outbox IN ACCESS EXCLUSIVE MODE')
    const committing = storage.commit({ changes: [change(2)], outbox: { put: [outbox('b')] } })
    await new Promise((r) => setTimeout(r, 300))
    // Meanwhile a takeover cannot happen: the lease's row is locked by the commit's check.
    await thief.query('BEGIN')
    await thief.query(`SET LOCAL lock_timeout = '500ms'`)
    await expect(takeOver(thief, identity)).rejects.toThrow(/lock timeout/)
    await thief.query('ROLLBACK')
    await blocker.query('COMMIT')
    await committing
    // Once it ended, the takeover goes through, and this instance's next commit fails whole.
    await takeOver(thief, identity)
    const error = await storage.commit({ changes: [change(3)], outbox: { put: [outbox('c')] }, meta: { syncedBlock: 9n } }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(LeaseLostError)
    expect(error).toBeInstanceOf(StorageError)
    expect((error as LeaseLostError).code).toBe('LEASE_LOST')
    expect(lost).toHaveLength(1)
    const loaded = await storage.load()
    expect(loaded.changes.map((c) => c.seq)).toEqual([1, 2])
    expect(loaded.outbox.map((r) => r.key).sort()).toEqual(['a', 'b'])
    expect(loaded.meta.syncedBlock).toBe(0n)
    // And every later one, without asking the database again.
    await expect(storage.commit({ outbox: { delete: ['a'] } })).rejects.toBeInstanceOf(LeaseLostError)
  } finally {
    blocker.release()
    thief.release()
    await storage.close()
  }
})

test('a takeover in flight when a commit starts: the commit waits for it, then fails and stores nothing', async () => {
  const identity = newIdentity()
  const storage = await openPgStorage(identity, { pool, lease: { durationMs: 3_000 } })
  await storage.commit({ changes: [change(1)] })
  const thief = await pool.connect()
  try {
    await thief.query('BEGIN')
    await takeOver(thief, identity)
    const committing = storage.commit({ changes: [change(2)], received: [received(newChannelKey(), 1n)] }).catch((e: unknown) => e)
    await new Promise((r) => setTimeout(r, 300))
    await thief.query('COMMIT')
    expect(await committing).toBeInstanceOf(LeaseLostError)
    expect((await storage.load()).changes.map((c) => c.seq)).toEqual([1])
  } finally {
    thief.release()
    await storage.close()
  }
})

test('a lease changed by hand (psql) makes the next commit fail', async () => {
  const identity = newIdentity()
  const storage = await openPgStorage(identity, { pool, lease: { durationMs: 3_000 } })
  await server.psql(`UPDATE sluice_leases SET holder = 'operator' WHERE name = '${nodeLeaseName(identity)}'`, 'contract')
  await expect(storage.commit({ changes: [change(1)] })).rejects.toMatchObject({ code: 'LEASE_LOST' })
  expect((await storage.load()).changes).toEqual([])
  await storage.close()
})

test('one database holds several nodes: each store sees its own rows only', async () => {
  const [a, b] = [newIdentity(), { ...newIdentity(), chainId: 5n }]
  const [sa, sb] = await Promise.all([openPgStorage(a, { pool, lease: { durationMs: 3_000 } }), openPgStorage(b, { pool, lease: { durationMs: 3_000 } })])
  await sa.commit({ changes: [change(1)], outbox: { put: [outbox('x')] } })
  await sb.commit({ changes: [change(1), change(2)] })
  expect((await sa.load()).changes.map((c) => c.seq)).toEqual([1])
  expect((await sb.load()).outbox).toEqual([])
  expect((await sb.load()).meta.chainId).toBe(5n)
  await Promise.all([sa.close(), sb.close()])
})
