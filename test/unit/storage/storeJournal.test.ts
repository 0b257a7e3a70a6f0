import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deserialize, serialize } from 'node:v8'
import { ClassicLevel } from 'classic-level'
import { getAddress } from 'viem'
import { afterAll, describe, expect, test } from 'vitest'
import type { JournalEntry } from '../../../src/chain/transactionJournal.ts'
import { channelKey } from '../../../src/monitor/records.ts'
import { MonitorStore } from '../../../src/monitor/store.ts'
import { storeJournal } from '../../../src/storage/storeJournal.ts'
import { StorageError } from '../../../src/storage/storage.ts'
import { journalAfterWrites, killAfterLines } from '../../support/journalWriter.ts'
import { journalEntry } from './support/records.ts'

const identity = {
  chainId: 31337,
  monitoringService: getAddress('0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0'),
  address: getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8'),
}
const tokenNetwork = getAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')
const dirs: string[] = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-monitor-journal-'))
  dirs.push(dir)
  return dir
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

describe("the monitoring service's transaction journal", () => {
  test('an entry is stored once put resolves and gone once delete resolves; a reopened store lists them in nonce order', async () => {
    const dir = tempDir()
    let store = await MonitorStore.open(dir, identity)
    let journal = storeJournal(store)
    expect(await journal.load()).toEqual([])
    // 9 < 10 < 100 as numbers, not as strings.
    for (const entry of [journalEntry(100), journalEntry(10), journalEntry(9), journalEntry(11)]) await journal.put(entry)
    await journal.put(journalEntry(10, 2, { status: 'mined' }))
    await journal.delete(11)
    const written = [journalEntry(9), journalEntry(10, 2, { status: 'mined' }), journalEntry(100)]
    expect(await journal.load()).toEqual(written)
    await store.close()
    store = await MonitorStore.open(dir, identity)
    journal = storeJournal(store)
    expect(await journal.load()).toEqual(written)
    await journal.delete(9)
    expect(await journal.load()).toEqual(written.slice(1))
    await store.close()
  })

  test("writes of one nonce land in the order they were made, in one batch with the service's other writes", async () => {
    const dir = tempDir()
    let store = await MonitorStore.open(dir, identity)
    const journal = storeJournal(store)
    const entry = journalEntry(1)
    await Promise.all([
      journal.put(entry),
      store.transact((tx) => tx.putChannel({ tokenNetwork, channelId: 1n, requests: {}, duties: {} })),
      journal.put(journalEntry(2)),
      journal.put(journalEntry(1, 2)),
      journal.delete(2),
      journal.delete(1),
      journal.put(journalEntry(1, 3)),
      journal.put(journalEntry(3)),
      journal.delete(3),
    ])
    // The caller changing its object after the call changes nothing.
    entry.status = 'mined'
    expect(await journal.load()).toEqual([journalEntry(1, 3)])
    await store.close()
    store = await MonitorStore.open(dir, identity)
    expect(store.journal()).toEqual([journalEntry(1, 3)])
    expect([...store.channels.keys()]).toEqual([channelKey(tokenNetwork, 1n)])
    // A copy: changing what came back changes nothing.
    store.journal()[0]!.attempts.length = 0
    expect(store.journal()).toEqual([journalEntry(1, 3)])
    await store.close()
  })

  test('an entry the store cannot take rejects alone: the writes batched with it are stored', async () => {
    const dir = tempDir()
    const store = await MonitorStore.open(dir, identity)
    const journal = storeJournal(store)
    const bad = { ...journalEntry(2), status: 'pending' } as unknown as JournalEntry
    const results = await Promise.allSettled([journal.put(journalEntry(1)), journal.put(bad), journal.delete(-1), journal.put(journalEntry(3))])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(StorageError)
    expect(await journal.load()).toEqual([journalEntry(1), journalEntry(3)])
    await store.close()
  })

  test('a store of schema 1 (before the journal) opens with its channels, takes schema 2, and keeps a journal', async () => {
    const dir = tempDir()
    let store = await MonitorStore.open(dir, identity)
    await store.transact((tx) => tx.putChannel({ tokenNetwork, channelId: 7n, requests: {}, duties: {} }))
    await store.close()
    // As the store of schema 1 left it: its meta said 1.
    const location = store.location
    const raw = new ClassicLevel<string, Uint8Array>(location, { valueEncoding: 'view' })
    const meta = { schema: 1, chainId: 31337, monitoringService: identity.monitoringService.toLowerCase(), address: identity.address.toLowerCase() }
    await raw.put('meta', serialize(meta))
    await raw.close()
    store = await MonitorStore.open(dir, identity)
    expect([...store.channels.keys()]).toEqual([channelKey(tokenNetwork, 7n)])
    expect(store.journal()).toEqual([])
    await storeJournal(store).put(journalEntry(0))
    await store.close()
    // A Sluice of schema 1 would not see the journal: the store says 2 now, which it refuses.
    const after = new ClassicLevel<string, Uint8Array>(location, { valueEncoding: 'view' })
    expect(deserialize((await after.get('meta'))!)).toEqual({ ...meta, schema: 2 })
    expect(await after.keys({ gte: 'j!', lt: 'j"' }).all()).toEqual(['j!0000000000000000'])
    await after.close()
  })

  test('every write a process saw resolve is there after kill -9', async () => {
    const dir = tempDir()
    const child = new URL('./support/storeJournalChild.ts', import.meta.url).pathname
    const lines = await killAfterLines(child, [dir, identity.monitoringService, identity.address], 120)
    const store = await MonitorStore.open(dir, identity)
    const stored = store.journal()
    await store.close()
    // Each write began once the one before had resolved: the store holds every write printed, and at most one more.
    expect(lines.slice(0, 4)).toEqual(['put 0', 'put 0 2', 'put 1', 'put 1 2'])
    expect([journalAfterWrites(lines.length), journalAfterWrites(lines.length + 1)]).toContainEqual(stored)
  })
})
