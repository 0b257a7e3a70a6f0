import { afterAll, describe, expect, test } from 'vitest'
import { Lease } from '../../../../src/storage/postgres/lease.ts'
import { openPostgresServiceStore, type PostgresServiceKv } from '../../../../src/storage/postgres/serviceStore.ts'
import { decode, encode } from '../../../../src/storage/serviceLevelStore.ts'
import type { KvChange } from '../../../../src/storage/serviceStore.ts'
import { testDatabases } from '../../../support/testDatabases.ts'

// The PostgreSQL engine of the services' stores (docs/decisions/0077) on a real server: two instances on one database,
// each with its own pool, as two processes would have.

const { server, database, newestDatabase, pool } = testDatabases('kv')
const kvs: PostgresServiceKv[] = []

afterAll(async () => {
  await Promise.all(kvs.map((kv) => kv.close().catch(() => {})))
})

const owner = { chainId: 'chain', contract: 'contract', address: 'service' }
const meta = (schema: number, address = '0xaa') => ({ schema, chainId: 31337, contract: '0xcc', address })

/** An instance of a store of numbers on `url`: its memory follows what the other instances write. */
async function instance(url: string, options: { lease?: Lease; address?: string; tombstones?: { keep: number; pruneEvery: number }; untracked?: string } = {}) {
  const { kv, loaded } = await openPostgresServiceStore(
    pool(url),
    {
      component: 'monitor',
      lease: options.lease,
      pollMs: 100_000,
      ...(options.tombstones ? { tombstones: options.tombstones } : {}),
      ...(options.untracked ? { untracked: options.untracked } : {}),
    },
    {
      meta: meta(1, options.address),
      owner,
      load: async (read) => {
        const numbers = new Map<string, number>()
        for await (const [key, value] of read.entries('n!')) numbers.set(key, decode<number>(value))
        return numbers
      },
    },
  )
  kvs.push(kv)
  const memory = loaded
  const seen: KvChange[][] = []
  kv.onChanges((changes) => {
    seen.push(changes)
    for (const { key, value } of changes) {
      if (!key.startsWith('n!')) continue
      if (value) memory.set(key, decode<number>(value))
      else memory.delete(key)
    }
  })
  /** One batch: `step` reads the memory (caught up) and says what to write; `needsLease`: refused without it. */
  const batch = (step: (memory: Map<string, number>) => Record<string, number | null>, needsLease = false) =>
    kv.commit(async ({ leaseHeld, write }) => {
      if (needsLease && !leaseHeld) throw new Error('no lease')
      const writes = Object.entries(step(memory))
      await write(writes.map(([key, value]) => (value === null ? { type: 'del', key } : { type: 'put', key, value: encode(value) })))
      return () => {
        for (const [key, value] of writes) {
          if (value === null) memory.delete(key)
          else memory.set(key, value)
        }
      }
    })
  return { kv, memory, seen, batch }
}

const eventually = async (check: () => void | Promise<void>, ms = 5_000) => {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await check()
    } catch (e) {
      if (Date.now() > deadline) throw e
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}

/** How many connections to the newest database LISTEN (their last statement). */
const listening = async () =>
  (await server().psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${newestDatabase()}' AND query LIKE 'LISTEN%'`)).trim()

describe("a service store's PostgreSQL engine", () => {
  test("another owner's store is refused, saying whose it is; a newer schema is refused (STORAGE_VERSION)", async () => {
    const url = await database()
    await instance(url)
    await expect(instance(url, { address: '0xbb' })).rejects.toMatchObject({
      code: 'STORAGE',
      message: expect.stringContaining('belongs to chain 31337, contract 0xcc, service 0xaa'),
    })
    await server().psql(`UPDATE monitor_kv SET value = decode('${Buffer.from(encode(meta(9))).toString('hex')}', 'hex') WHERE key = 'meta'`, newestDatabase())
    await expect(instance(url)).rejects.toMatchObject({ code: 'STORAGE_VERSION' })
  })

  test("what one instance writes reaches the other's memory by notification, deletions too; a new instance loads it all", async () => {
    const url = await database()
    const [a, b] = [await instance(url), await instance(url)]
    await a.batch(() => ({ 'n!1': 1, 'n!2': 2 }))
    // The poll is 100 s away: this is the notification.
    await eventually(() => expect(Object.fromEntries(b.memory)).toEqual({ 'n!1': 1, 'n!2': 2 }))
    await b.batch(() => ({ 'n!1': null }))
    await eventually(() => expect(Object.fromEntries(a.memory)).toEqual({ 'n!2': 2 }))
    const c = await instance(url)
    expect(Object.fromEntries(c.memory)).toEqual({ 'n!2': 2 })
    expect(await c.kv.get('n!1')).toBeUndefined()
    expect(decode((await c.kv.get('n!2')) as Uint8Array)).toBe(2)
  })

  test('batches of two instances at once are serialized: each runs against the memory the other left, no increment is lost', async () => {
    const url = await database()
    const [a, b] = [await instance(url), await instance(url)]
    const increment = (m: Map<string, number>) => ({ 'n!count': (m.get('n!count') ?? 0) + 1 })
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).batch(increment)))
    expect(a.memory.get('n!count') === 40 || b.memory.get('n!count') === 40).toBe(true)
    await eventually(() => {
      expect(a.memory.get('n!count')).toBe(40)
      expect(b.memory.get('n!count')).toBe(40)
    })
  })

  test("a batch says the lease is held only to its holder, checked in its transaction; once the holder stops, the other's", async () => {
    const url = await database()
    const leaseOf = (holder: string) => Lease.start(pool(url), { name: 'monitor:test', durationMs: 600, holder })
    const first = await leaseOf('first')
    const second = await leaseOf('second')
    expect([first.held, second.held]).toEqual([true, false])
    const [a, b] = [await instance(url, { lease: first }), await instance(url, { lease: second })]
    await a.batch(() => ({ 'n!duty': 1 }), true)
    await expect(b.batch(() => ({ 'n!duty': 2 }), true)).rejects.toThrow('no lease')
    await first.stop()
    await second.waitUntilHeld(AbortSignal.timeout(5_000))
    await expect(a.batch(() => ({ 'n!duty': 3 }), true)).rejects.toThrow('no lease')
    await b.batch((m) => ({ 'n!duty': (m.get('n!duty') ?? 0) + 10 }), true)
    await eventually(() => expect(a.memory.get('n!duty')).toBe(11))
    await second.stop()
  })

  test('a notification lost is made up by the poll', async () => {
    const url = await database()
    const { kv } = await openPostgresServiceStore(pool(url), { component: 'monitor', pollMs: 100 }, { meta: meta(1), owner, load: async () => undefined })
    kvs.push(kv)
    const seen: string[] = []
    kv.onChanges((changes) => seen.push(...changes.map((c) => c.key)))
    // Written behind the engine's back: no NOTIFY, only a new seq.
    await server().psql(`INSERT INTO monitor_kv (key, value, seq) VALUES ('n!quiet', '\\x00', nextval('monitor_kv_seq'))`, newestDatabase())
    await eventually(() => expect(seen).toContain('n!quiet'))
  })

  test('a store closed gives its LISTEN connection back clean: a later store on the same pool survives that connection being cut', async () => {
    const url = await database()
    // One connection: the second store's LISTEN runs on the very client the first one gave back.
    const shared = pool(url, { max: 1 })
    const open = async (errors: Error[]) => {
      const { kv } = await openPostgresServiceStore(
        shared,
        { component: 'monitor', pollMs: 100_000, onError: (e) => errors.push(e) },
        { meta: meta(1), owner, load: async () => undefined },
      )
      kvs.push(kv)
      // A store listens from its first follower on.
      kv.onChanges(() => {})
      await eventually(async () => expect(await listening()).toBe('1'))
      return kv
    }
    const firstErrors: Error[] = []
    await (await open(firstErrors)).close()
    const errors: Error[] = []
    const kv = await open(errors)
    const uncaught: unknown[] = []
    const onUncaught = (e: unknown) => uncaught.push(e)
    process.on('uncaughtException', onUncaught)
    try {
      await server().psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${newestDatabase()}' AND query LIKE 'LISTEN%'`)
      await eventually(() => expect(errors).toHaveLength(1))
      await new Promise((r) => setTimeout(r, 200))
      expect(uncaught).toEqual([])
      expect(firstErrors).toEqual([])
      expect(errors).toHaveLength(1)
    } finally {
      process.off('uncaughtException', onUncaught)
    }
    await kv.close()
  })

  test('a LISTEN connection cut is replaced: what another instance writes reaches the store by notification again', async () => {
    const url = await database()
    const errors: Error[] = []
    const { kv } = await openPostgresServiceStore(
      pool(url),
      { component: 'monitor', pollMs: 100_000, onError: (e) => errors.push(e) },
      { meta: meta(1), owner, load: async () => undefined },
    )
    kvs.push(kv)
    const seen: string[] = []
    kv.onChanges((changes) => seen.push(...changes.map((c) => c.key)))
    await eventually(async () => expect(await listening()).toBe('1'))
    await server().psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${newestDatabase()}' AND query LIKE 'LISTEN%'`)
    await eventually(() => expect(errors).toHaveLength(1))
    expect(errors[0]).toMatchObject({ code: 'STORAGE' })
    // The poll is 100 s away; a new LISTEN is made a second after the cut.
    await eventually(async () => expect(await listening()).toBe('1'))
    const other = await instance(url)
    await other.batch(() => ({ 'n!after': 1 }))
    await eventually(() => expect(seen).toContain('n!after'))
  })

  test('tombstones are pruned as batches go by: the table keeps only the recent ones', async () => {
    const url = await database()
    const a = await instance(url, { tombstones: { keep: 4, pruneEvery: 4 } })
    for (let i = 0; i < 30; i++) {
      await a.batch(() => ({ [`n!${i}`]: i }))
      await a.batch(() => ({ [`n!${i}`]: null }))
    }
    const tombstones = Number(await server().psql(`SELECT count(*) FROM monitor_kv WHERE value IS NULL`, newestDatabase()))
    // Without pruning there would be 30; the ones of the last 4 to 8 batches stay.
    expect(tombstones).toBeGreaterThan(0)
    expect(tombstones).toBeLessThanOrEqual(8)
    expect(Object.fromEntries(a.memory)).toEqual({})
  })

  test('an instance that had not seen deletions whose tombstones were pruned reads the table whole, and hears them', async () => {
    const url = await database()
    const tombstones = { keep: 4, pruneEvery: 4 }
    const a = await instance(url, { tombstones })
    await a.batch(() => ({ 'n!kept': 1, 'n!gone': 2, 'n!cleared': 3 }))
    // B loads the table, and follows nothing yet (no listener: no LISTEN, no poll): it falls behind.
    const memory = new Map<string, number>()
    const { kv: b } = await openPostgresServiceStore(
      pool(url),
      { component: 'monitor', pollMs: 100_000, tombstones },
      {
        meta: meta(1),
        owner,
        load: async (read) => {
          for await (const [key, value] of read.entries('n!')) memory.set(key, decode<number>(value))
        },
      },
    )
    kvs.push(b)
    expect(Object.fromEntries(memory)).toEqual({ 'n!kept': 1, 'n!gone': 2, 'n!cleared': 3 })
    await a.batch(() => ({ 'n!gone': null, 'n!kept': 10 }))
    for (let i = 0; i < 12; i++) await a.batch(() => ({ 'n!other': i }))
    await a.kv.clearRange('n!cleared', 'n!cleared~')
    // The tombstone of n!gone is gone from the table; only the horizon says a deletion may have been missed.
    expect((await server().psql(`SELECT count(*) FROM monitor_kv WHERE key = 'n!gone'`, newestDatabase())).trim()).toBe('0')
    const heard: KvChange[] = []
    b.onChanges((changes) => {
      heard.push(...changes)
      for (const { key, value } of changes) {
        if (!key.startsWith('n!')) continue
        if (value) memory.set(key, decode<number>(value))
        else memory.delete(key)
      }
    })
    await b.catchUp()
    expect(Object.fromEntries(memory)).toEqual({ 'n!kept': 10, 'n!other': 11 })
    expect(heard.filter((c) => c.value === undefined).map((c) => c.key)).toEqual(expect.arrayContaining(['n!gone', 'n!cleared']))
    // Caught up past the horizon: the next look reads only what is new again (B listens now: the notification may
    // bring it first; either way it comes once).
    heard.length = 0
    await a.batch(() => ({ 'n!later': 1 }))
    await b.catchUp()
    expect(heard.map((c) => c.key)).toEqual(['n!later'])
  })

  test('records no instance keeps in memory (untracked) are read from the table, and never handed to the other instances', async () => {
    const url = await database()
    const [a, b] = [await instance(url, { untracked: 'f!' }), await instance(url, { untracked: 'f!' })]
    await a.batch(() => ({ 'f!1': 1, 'f!2': 2, 'n!1': 1 }))
    await eventually(() => expect(Object.fromEntries(b.memory)).toEqual({ 'n!1': 1 }))
    expect(decode((await b.kv.get('f!2')) as Uint8Array)).toBe(2)
    await a.kv.clearRange('f!', 'f!~')
    expect(await b.kv.get('f!2')).toBeUndefined()
    await a.batch(() => ({ 'n!2': 2 }))
    await eventually(() => expect(Object.fromEntries(b.memory)).toEqual({ 'n!1': 1, 'n!2': 2 }))
    // What B was handed: the records it follows, none of the untracked ones (an instance that kept them would hold
    // every key ever written under them, as the routes answered are cleared without tombstones).
    expect(b.seen.flat().map((c) => c.key)).toEqual(['n!1', 'n!2'])
  })
})
