import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getAddress } from 'viem'
import { afterAll, describe, expect, test } from 'vitest'
import { channelKey, type WatchedChannel } from '../../../src/monitor/records.ts'
import { MonitorStore } from '../../../src/monitor/store.ts'

const identity = {
  chainId: 31337,
  monitoringService: getAddress('0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'),
  address: getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'),
}
const tokenNetwork = getAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')
const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-monitor-store-'))
  dirs.push(dir)
  return dir
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

const channel = (channelId: bigint, note = ''): WatchedChannel => ({
  tokenNetwork,
  channelId,
  requests: {},
  duties: note ? { '0xabc': { closing: tokenNetwork, nonClosing: identity.address, monitor: { status: 'due', note } } } : {},
})

describe('the monitoring service store', () => {
  test('steps queued together are one batch: each sees the ones before it; a throwing step is dropped alone; all survive a reopen', async () => {
    const dir = tempDir()
    const store = await MonitorStore.open(dir, identity)
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

    const reopened = await MonitorStore.open(dir, identity)
    expect([...reopened.channels.keys()].sort()).toEqual([channelKey(tokenNetwork, 1n), channelKey(tokenNetwork, 3n)])
    expect(reopened.channels.get(channelKey(tokenNetwork, 1n))?.duties['0xabc']?.monitor.note).toBe('second')
    expect(reopened.sync?.syncedBlock).toBe(42n)
    expect(reopened.openChannels()).toEqual([channelKey(tokenNetwork, 1n)])
    await reopened.close()
  })

  test('a record taken out of a step is a copy: changing it changes nothing until it is put back', async () => {
    const store = await MonitorStore.open(tempDir(), identity)
    await store.transact((tx) => tx.putChannel(channel(1n, 'kept')))
    await store.transact((tx) => {
      tx.channel(channelKey(tokenNetwork, 1n))!.duties['0xabc']!.monitor.note = 'changed'
    })
    expect(store.channels.get(channelKey(tokenNetwork, 1n))?.duties['0xabc']?.monitor.note).toBe('kept')
    await store.close()
  })

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
