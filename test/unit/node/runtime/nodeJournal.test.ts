import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { JournalEntry } from '../../../../src/chain/transactionJournal.ts'
import { Engine } from '../../../../src/node/runtime/engine.ts'
import { nodeJournal } from '../../../../src/node/runtime/nodeJournal.ts'
import { defaultContext, initialState } from '../../../../src/protocol/state/access.ts'
import { openLevelStorage } from '../../../../src/storage/levelStorage.ts'
import { StorageError, type Storage, type StorageIdentity } from '../../../../src/storage/storage.ts'
import { journalAfterWrites, killAfterLines } from '../../../support/journalWriter.ts'
import { journalEntry, newIdentity } from '../../storage/support/records.ts'

let dataDir = ''
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sluice-node-journal-'))
})
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true })
})

/** A node's store on disk (LevelDB), its engine and its journal over what the store loaded. */
async function startNode(identity: StorageIdentity): Promise<{ storage: Storage; engine: Engine; journal: ReturnType<typeof nodeJournal> }> {
  const storage = await openLevelStorage(identity, { dataDir })
  const loaded = await storage.load()
  const engine = new Engine({
    state: initialState({ address: identity.address, chainId: identity.chainId, blockNumber: 0n }),
    seq: loaded.changes.at(-1)?.seq ?? 0,
    ctx: defaultContext,
    storage,
    now: Date.now,
    onApplied: () => {},
  })
  return { storage, engine, journal: nodeJournal(engine, loaded.chainTransactions) }
}

async function stopNode(node: { storage: Storage; engine: Engine }): Promise<void> {
  node.engine.close()
  await node.engine.settled()
  await node.storage.close()
}

describe('the node journal', () => {
  test('an entry is in the store once put resolves, and gone once delete resolves: a reopened store says so, in nonce order', async () => {
    const identity = newIdentity()
    let node = await startNode(identity)
    expect(await node.journal.load()).toEqual([])
    await node.journal.put(journalEntry(10))
    await node.journal.put(journalEntry(9))
    await node.journal.put(journalEntry(11))
    await node.journal.put(journalEntry(10, 2, { status: 'mined' }))
    await node.journal.delete(9)
    const written = [journalEntry(10, 2, { status: 'mined' }), journalEntry(11)]
    // Straight from the store, not from the journal's memory.
    expect((await node.storage.load()).chainTransactions).toEqual(written)
    expect(await node.journal.load()).toEqual(written)
    await stopNode(node)
    node = await startNode(identity)
    expect(await node.journal.load()).toEqual(written)
    // What the store held at start, with what is written since.
    await node.journal.put(journalEntry(12))
    await node.journal.delete(10)
    expect(await node.journal.load()).toEqual([journalEntry(11), journalEntry(12)])
    await stopNode(node)
  })

  test('puts and deletes of one nonce made together land in the order they were made, in the store and in load', async () => {
    const identity = newIdentity()
    let node = await startNode(identity)
    // Not awaited one by one: they share commits, as a queue's writes do while another commit is on the disk.
    await Promise.all([
      node.journal.put(journalEntry(1)),
      node.journal.put(journalEntry(2)),
      node.engine.dispatch({ type: 'block', blockNumber: 1n }),
      node.journal.put(journalEntry(1, 2)),
      node.journal.delete(2),
      node.journal.put(journalEntry(3)),
      node.journal.delete(1),
      node.journal.put(journalEntry(1, 3)),
      node.journal.delete(3),
    ])
    const expected = [journalEntry(1, 3)]
    expect(await node.journal.load()).toEqual(expected)
    expect((await node.storage.load()).chainTransactions).toEqual(expected)
    await stopNode(node)
    node = await startNode(identity)
    expect(await node.journal.load()).toEqual(expected)
    await stopNode(node)
  })

  test('load gives copies, and a put copies its entry: changing either changes nothing', async () => {
    const node = await startNode(newIdentity())
    const entry = journalEntry(4)
    const put = node.journal.put(entry)
    entry.status = 'mined'
    await put
    ;(await node.journal.load())[0]!.attempts.length = 0
    expect(await node.journal.load()).toEqual([journalEntry(4)])
    expect((await node.storage.load()).chainTransactions).toEqual([journalEntry(4)])
    await stopNode(node)
  })

  test('a put the store cannot take rejects, and neither load nor the store has it', async () => {
    const node = await startNode(newIdentity())
    await node.journal.put(journalEntry(0))
    const bad = { ...journalEntry(1), attempts: [{ ...journalEntry(1).attempts[0]!, hash: '0x12' }] } as JournalEntry
    await expect(node.journal.put(bad)).rejects.toBeInstanceOf(StorageError)
    await expect(node.journal.delete(-1)).rejects.toBeInstanceOf(StorageError)
    expect(await node.journal.load()).toEqual([journalEntry(0)])
    expect((await node.storage.load()).chainTransactions).toEqual([journalEntry(0)])
    await stopNode(node)
  })

  test('every write a process saw resolve is there after kill -9', async () => {
    const identity = newIdentity()
    const child = new URL('./support/journalChild.ts', import.meta.url).pathname
    const lines = await killAfterLines(child, [dataDir, identity.registry, identity.address], 120)
    const storage = await openLevelStorage({ ...identity, chainId: 1n }, { dataDir })
    const stored = (await storage.load()).chainTransactions
    await storage.close()
    // Each write began once the one before had resolved: the store holds every write printed, and at most one more.
    expect(lines.slice(0, 4)).toEqual(['put 0', 'put 0 2', 'put 1', 'put 1 2'])
    expect([journalAfterWrites(lines.length), journalAfterWrites(lines.length + 1)]).toContainEqual(stored)
  })
})
