import { getAddress } from 'viem'
import { describe, expect, test } from 'vitest'
import type { JournalEntry } from '../../../src/chain/transactionJournal.ts'
import { channelKey, type WatchedChannel } from '../../../src/monitor/records.ts'
import { MonitorStore } from '../../../src/monitor/store.ts'
import { Lease } from '../../../src/storage/postgres/lease.ts'
import { serviceStoreEngines } from '../../support/serviceStores.ts'

const identity = {
  chainId: 31337,
  monitoringService: getAddress('0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'),
  address: getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'),
}
const tokenNetwork = getAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')
const { engines, tempDir, pool, database } = serviceStoreEngines('monitor', {
  open: (dataDir) => MonitorStore.open(dataDir, identity),
  openPostgres: (pool) => MonitorStore.openPostgres(pool, identity),
})

const channel = (channelId: bigint, note = ''): WatchedChannel => ({
  tokenNetwork,
  channelId,
  requests: {},
  duties: note ? { '0xabc': { closing: tokenNetwork, nonClosing: identity.address, monitor: { status: 'due', note } } } : {},
})

describe.each(engines)('the monitoring service store on $engine', ({ place }) => {
  test('steps queued together are one batch: each sees the ones before it; a throwing step is dropped alone; all survive a reopen', async () => {
    const open = await place()
    const store = await open()
    const seen: (string | undefined)[] = []
    const results = await Promise.allSettled([
      store.transact((tx) => tx.putChannel(channel(1n, 'first'))),
      store.transact((tx) => {
        seen.push(tx.channel(channelKey(tokenNetwork, 1n))?.duties['0xabc']?.monitor.note)
        tx.putChannel(channel(1n, 'second'))
      }),
      store.transact((tx) => {
        tx.putChannel(channel(2n, 'never'))
        throw new Error('a bug in a step')
      }),
      store.transact((tx) => {
        tx.putChannel(channel(3n))
        tx.putSync({ syncedBlock: 42n, recentBlocks: [], tokenNetworks: [tokenNetwork] })
        return 'done'
      }),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
    expect(seen).toEqual(['first'])
    expect(store.openChannels()).toEqual([channelKey(tokenNetwork, 1n)])
    await store.close()

    const reopened = await open()
    expect([...reopened.channels.keys()].sort()).toEqual([channelKey(tokenNetwork, 1n), channelKey(tokenNetwork, 3n)])
    expect(reopened.channels.get(channelKey(tokenNetwork, 1n))?.duties['0xabc']?.monitor.note).toBe('second')
    expect(reopened.sync?.syncedBlock).toBe(42n)
    expect(reopened.openChannels()).toEqual([channelKey(tokenNetwork, 1n)])
    await reopened.close()
  })

  test('a record taken out of a step is a copy: changing it changes nothing until it is put back', async () => {
    const store = await (await place())()
    await store.transact((tx) => tx.putChannel(channel(1n, 'kept')))
    await store.transact((tx) => {
      tx.channel(channelKey(tokenNetwork, 1n))!.duties['0xabc']!.monitor.note = 'changed'
    })
    expect(store.channels.get(channelKey(tokenNetwork, 1n))?.duties['0xabc']?.monitor.note).toBe('kept')
    await store.close()
  })
})

describe('the monitoring service store', () => {
  test("a second open of the same store is refused (STORAGE_LOCKED); another key's store is another directory", async () => {
    const dir = tempDir()
    const store = await MonitorStore.open(dir, identity)
    await expect(MonitorStore.open(dir, identity)).rejects.toMatchObject({ code: 'STORAGE_LOCKED' })
    await store.close()
    // The directory name says whose it is: a store of another key is another directory, so it opens empty.
    const other = await MonitorStore.open(dir, { ...identity, address: getAddress('0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC') })
    expect(other.channels.size).toBe(0)
    await other.close()
  })
})

describe('the monitoring service store of two instances on one database', () => {
  test("each one's writes reach the other's memory and indexes; only the lease holder's journal entries and duties are written", async () => {
    const url = await database()
    const leaseOf = (holder: string) => Lease.start(pool(url), { name: 'monitor:test', durationMs: 3_000, holder })
    const [leaderLease, standbyLease] = [await leaseOf('leader'), await leaseOf('standby')]
    const leader = await MonitorStore.openPostgres(pool(url), identity, { lease: leaderLease, pollMs: 100_000 })
    const standby = await MonitorStore.openPostgres(pool(url), identity, { lease: standbyLease, pollMs: 100_000 })

    // A request taken by either is the other's at once (no lease needed): the requester's index follows.
    await standby.transact((tx) => {
      const c = channel(1n)
      c.requests['0xreq'] = { closing: tokenNetwork, receivedAt: 1 } as never
      tx.putChannel(c)
    })
    await eventually(() => expect(leader.requesterChannels('0xreq')).toBe(1))
    // A duty, a journal entry: the holder's pass, the other's are refused alone (LEASE_LOST) in the same batch.
    const entry: JournalEntry = {
      nonce: 0,
      call: { to: tokenNetwork, data: '0x', description: 'monitor' },
      gas: 1n,
      attempts: [],
      status: 'signed',
      createdAt: 1,
    }
    const guarded = (tx: Parameters<Parameters<MonitorStore['transact']>[0]>[0]) => {
      tx.requireLease()
      tx.putJournalEntry(entry)
      tx.putChannel(channel(1n, 'due'))
    }
    const [refused, taken] = await Promise.allSettled([standby.transact(guarded), standby.transact((tx) => tx.putChannel(channel(2n)))])
    expect(refused).toMatchObject({ status: 'rejected', reason: { code: 'LEASE_LOST' } })
    expect(taken.status).toBe('fulfilled')
    await leader.transact(guarded)
    await eventually(() => {
      expect(standby.journal().map((e) => e.nonce)).toEqual([0])
      expect(standby.openChannels()).toEqual([channelKey(tokenNetwork, 1n)])
      expect(standby.requesterChannels('0xreq')).toBe(0)
    })
    await leader.transact((tx) => {
      tx.requireLease()
      tx.deleteJournalEntry(0)
      tx.deleteChannel(channelKey(tokenNetwork, 2n))
    })
    await eventually(() => {
      expect(standby.journal()).toEqual([])
      expect([...standby.channels.keys()]).toEqual([channelKey(tokenNetwork, 1n)])
    })
    await Promise.all([leader.close(), standby.close(), leaderLease.stop(), standbyLease.stop()])
  })
})

async function eventually(check: () => void, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return check()
    } catch (e) {
      if (Date.now() > deadline) throw e
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}
