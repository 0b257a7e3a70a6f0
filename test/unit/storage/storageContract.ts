import { afterEach, describe, expect, test } from 'vitest'
import { jsonParse, jsonStringify } from '../../../src/storage/json.ts'
import type { Message } from '../../../src/protocol/messages/types.ts'
import {
  DumpRejectedError,
  STORAGE_SCHEMA_VERSION,
  StorageClosedError,
  StorageError,
  StorageLockedError,
  type Commit,
  type Storage,
  type StorageDump,
  type StorageIdentity,
} from '../../../src/storage/storage.ts'
import { BIG, chainEvent, change, event, newIdentity, outbox, payment, randomAddress, snapshot, transaction } from './support/records.ts'

/** How the shared suite reaches one adapter. */
export type StorageUnderTest = {
  /** Opens the store of `identity` where this adapter keeps it (the same place on every call). */
  open(identity: StorageIdentity): Promise<Storage>
  /** Removes the (closed) store of `identity`, so that the next open starts empty. */
  destroy(identity: StorageIdentity): Promise<void>
  /** Whether a second open of a store that is open fails with StorageLockedError. */
  singleInstance: boolean
}

/**
 * The behaviour every Storage adapter must have, written once and run against each (memory, LevelDB,
 * fake-indexeddb in Node, real IndexedDB in Chromium).
 */
export function describeStorageContract(name: string, adapter: StorageUnderTest): void {
  describe(`${name}: storage contract`, () => {
    const opened: Storage[] = []
    async function open(identity: StorageIdentity = newIdentity()): Promise<Storage> {
      const storage = await adapter.open(identity)
      opened.push(storage)
      return storage
    }
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()))
    })

    /** One of every kind of row, and a meta change. */
    function everything(identity: StorageIdentity): Commit {
      const token = randomAddress()
      return {
        changes: [change(1), change(2), change(3)],
        snapshot: snapshot(2, identity.address),
        events: [event(1), event(2)],
        payments: [payment(1, token, randomAddress()), payment(2, token, randomAddress())],
        chainEvents: [chainEvent(10n, 0, { channelId: BIG }), chainEvent(11n, 3)],
        outbox: { put: [outbox('a'), outbox('b')] },
        transactions: { put: [transaction('t1'), transaction('t2', 'sent')] },
        meta: { syncedBlock: 11n },
      }
    }

    test('a new store loads its meta and nothing else', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      const loaded = await storage.load()
      expect(loaded).toEqual({
        meta: { ...identity, schemaVersion: STORAGE_SCHEMA_VERSION, syncedBlock: 0n, createdAt: expect.any(Number) },
        changes: [],
        outbox: [],
        transactions: [],
      })
      expect(loaded.snapshot).toBeUndefined()
      expect(Math.abs(loaded.meta.createdAt - Date.now())).toBeLessThan(60_000)
    })

    test('commit then load gives back meta, snapshot, the changes after the snapshot in seq order, outbox and transactions', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      const snap = snapshot(3, identity.address)
      await storage.commit({ changes: [change(1), change(2), change(3)], outbox: { put: [outbox('a'), outbox('b')] }, transactions: { put: [transaction('t1')] }, meta: { syncedBlock: 10n } })
      await storage.commit({ changes: [change(6), change(4)], snapshot: snap })
      await storage.commit({ changes: [change(5)] })
      const loaded = await storage.load()
      expect(loaded.meta).toMatchObject({ ...identity, syncedBlock: 10n, schemaVersion: STORAGE_SCHEMA_VERSION })
      expect(loaded.snapshot).toEqual(snap)
      expect(loaded.changes).toEqual([change(4), change(5), change(6)])
      expect(sortByKey(loaded.outbox)).toEqual([outbox('a'), outbox('b')])
      expect(loaded.transactions).toEqual([transaction('t1')])
    })

    test('pruneChangesUpTo drops the changes inside the snapshot, those of the same commit too', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit({ changes: [change(1), change(2), change(3), change(4)] })
      await storage.commit({ changes: [change(5), change(6)], snapshot: snapshot(5, identity.address), pruneChangesUpTo: 5 })
      expect((await storage.load()).changes.map((c) => c.seq)).toEqual([6])
      // Gone from the store, not only hidden behind the snapshot.
      expect((await storage.exportDump()).changes.map((c) => c.seq)).toEqual([6])
      await storage.commit({ pruneChangesUpTo: 6 })
      expect((await storage.exportDump()).changes).toEqual([])
    })

    test('outbox and transaction records are put, replaced by key and deleted; a key put and deleted in one commit is gone', async () => {
      const storage = await open()
      await storage.commit({ outbox: { put: [outbox('a'), outbox('b'), outbox('c')] }, transactions: { put: [transaction('t1'), transaction('t2')] } })
      await storage.commit({ outbox: { put: [outbox('a', 3)], delete: ['b', 'never-there'] }, transactions: { put: [transaction('t1', 'sent')], delete: ['t2'] } })
      let loaded = await storage.load()
      expect(sortByKey(loaded.outbox).map((r) => [r.key, r.attempts])).toEqual([['a', 3], ['c', 0]])
      expect(loaded.transactions).toHaveLength(1)
      expect(loaded.transactions[0]).toMatchObject({ key: 't1', status: 'sent', nonce: 4 })
      await storage.commit({ outbox: { put: [outbox('d')], delete: ['d', 'c'] }, transactions: { put: [transaction('t3')], delete: ['t3'] } })
      loaded = await storage.load()
      expect(loaded.outbox.map((r) => r.key)).toEqual(['a'])
      expect(loaded.transactions.map((r) => r.key)).toEqual(['t1'])
    })

    test('a commit with empty lists (only an outbox delete, say) is fine', async () => {
      const storage = await open()
      await storage.commit({ outbox: { put: [outbox('a')] } })
      await storage.commit({ changes: [], events: [], payments: [], chainEvents: [], outbox: { put: [], delete: ['a'] }, transactions: { put: [], delete: [] } })
      expect((await storage.load()).outbox).toEqual([])
    })

    test('bigints up to 2^255 survive in every kind of row', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      const token = randomAddress()
      await storage.commit({
        changes: [change(1, BIG)],
        snapshot: snapshot(1, identity.address, BIG),
        events: [event(1)],
        payments: [payment(1, token, randomAddress(), BIG)],
        chainEvents: [chainEvent(5n, 1, { channelId: BIG })],
        outbox: { put: [outbox('a')] },
        transactions: { put: [transaction('t')] },
        meta: { syncedBlock: BIG },
      })
      const loaded = await storage.load()
      expect(loaded.meta.syncedBlock).toBe(BIG)
      expect(loaded.snapshot!.state.blockNumber).toBe(BIG)
      expect(Object.values(loaded.snapshot!.state.registeredSecrets)).toEqual([BIG])
      expect((await storage.exportDump()).changes[0]!.change).toMatchObject({ totalDeposit: BIG })
      expect(loaded.outbox[0]!.message).toMatchObject({ payment_identifier: BIG, amount: BIG })
      expect((await storage.payments({}))[0]!.amount).toBe(BIG)
      expect((await storage.events({}))[0]!.event).toMatchObject({ channelId: BIG })
      const [chain] = await storage.chainEvents({ channelId: BIG })
      expect(chain!.args.total_deposit).toBe(BIG)
      expect(typeof chain!.blockNumber).toBe('bigint')
    })

    test('payments are filtered by token, by partner and by both, oldest first, and paged', async () => {
      const storage = await open()
      const [t1, t2, p1, p2] = [randomAddress(), randomAddress(), randomAddress(), randomAddress()]
      const all = Array.from({ length: 12 }, (_, i) => payment(i + 1, i % 2 ? t2 : t1, i % 3 ? p2 : p1))
      // Written out of order, in several commits: the history is still by seq.
      await storage.commit({ payments: all.slice(6) })
      await storage.commit({ payments: all.slice(0, 6).reverse() })
      const seqs = (rows: { seq: number }[]) => rows.map((r) => r.seq)
      const expected = (f: (p: (typeof all)[number]) => boolean) => seqs(all.filter(f))
      expect(seqs(await storage.payments({}))).toEqual(expected(() => true))
      expect(seqs(await storage.payments({ token: t1 }))).toEqual(expected((p) => p.token === t1))
      expect(seqs(await storage.payments({ partner: p1 }))).toEqual(expected((p) => p.partner === p1))
      expect(seqs(await storage.payments({ token: t2, partner: p2 }))).toEqual(expected((p) => p.token === t2 && p.partner === p2))
      // Addresses match whatever their case.
      expect(seqs(await storage.payments({ token: t2.toLowerCase() as typeof t2, partner: p2.toUpperCase().replace('0X', '0x') as typeof p2 }))).toEqual(
        expected((p) => p.token === t2 && p.partner === p2),
      )
      expect(seqs(await storage.payments({ limit: 3, offset: 2 }))).toEqual([3, 4, 5])
      expect(seqs(await storage.payments({ token: t1, limit: 2, offset: 1 }))).toEqual(expected((p) => p.token === t1).slice(1, 3))
      expect(seqs(await storage.payments({ token: t1, partner: p1, offset: 1 }))).toEqual(expected((p) => p.token === t1 && p.partner === p1).slice(1))
      expect(await storage.payments({ offset: 12 })).toEqual([])
      expect(await storage.payments({ limit: 0 })).toEqual([])
      expect(await storage.payments({ token: randomAddress() })).toEqual([])
      expect((await storage.payments({ limit: 1 }))[0]).toEqual(all[0])
      await expect(storage.payments({ offset: -1 })).rejects.toBeInstanceOf(StorageError)
      await expect(storage.payments({ limit: 1.5 })).rejects.toBeInstanceOf(StorageError)
    })

    test('a page deep in 5,000 payments comes from the right rows', async () => {
      const storage = await open()
      const [t1, t2] = [randomAddress(), randomAddress()]
      const partners = [randomAddress(), randomAddress(), randomAddress()]
      const all = Array.from({ length: 5000 }, (_, i) => payment(i + 1, i % 2 ? t2 : t1, partners[i % 3]!))
      for (let i = 0; i < all.length; i += 1000) await storage.commit({ payments: all.slice(i, i + 1000) })
      expect((await storage.payments({ offset: 4990, limit: 5 })).map((p) => p.seq)).toEqual([4991, 4992, 4993, 4994, 4995])
      const ofT2 = all.filter((p) => p.token === t2)
      expect(await storage.payments({ token: t2, offset: 2490, limit: 5 })).toEqual(ofT2.slice(2490, 2495))
      const ofT1P0 = all.filter((p) => p.token === t1 && p.partner === partners[0])
      expect(await storage.payments({ token: t1, partner: partners[0], offset: ofT1P0.length - 2, limit: 5 })).toEqual(ofT1P0.slice(-2))
      expect((await storage.payments({ offset: 4998 })).map((p) => p.seq)).toEqual([4999, 5000])
    })

    test('a payment written again under its seq is found only under its new token and partner', async () => {
      const storage = await open()
      const [t1, t2, p1, p2] = [randomAddress(), randomAddress(), randomAddress(), randomAddress()]
      await storage.commit({ payments: [payment(1, t1, p1), payment(2, t1, p1)] })
      await storage.commit({ payments: [payment(1, t2, p2, 9n)] })
      expect((await storage.payments({ token: t1 })).map((p) => p.seq)).toEqual([2])
      expect((await storage.payments({ partner: p1 })).map((p) => p.seq)).toEqual([2])
      expect(await storage.payments({ token: t2, partner: p2 })).toMatchObject([{ seq: 1, amount: 9n }])
      expect((await storage.payments({})).map((p) => p.seq)).toEqual([1, 2])
    })

    test('events are kept oldest first and paged', async () => {
      const storage = await open()
      await storage.commit({ events: [event(3), event(1)] })
      await storage.commit({ events: [event(2), event(5), event(4)] })
      expect((await storage.events({})).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5])
      expect((await storage.events({ offset: 1, limit: 2 })).map((e) => e.seq)).toEqual([2, 3])
      expect((await storage.events({ offset: 4, limit: 10 })).map((e) => e.seq)).toEqual([5])
      expect(await storage.events({ offset: 5 })).toEqual([])
      expect(await storage.events({ limit: 0 })).toEqual([])
      expect((await storage.events({ limit: 1 }))[0]).toEqual(event(1))
    })

    test('chain events are filtered by address, token network, channel and an inclusive block span, in (block, log index) order', async () => {
      const storage = await open()
      const [registry, tn1, tn2] = [randomAddress(), randomAddress(), randomAddress()]
      const rows = [
        chainEvent(100n, 2, { address: registry, name: 'TokenNetworkCreated', args: { token_network_address: tn1 } }),
        chainEvent(100n, 1, { tokenNetwork: tn1, channelId: 1n, participants: [randomAddress(), randomAddress()] }),
        chainEvent(101n, 0, { tokenNetwork: tn1, channelId: 2n }),
        chainEvent(102n, 7, { tokenNetwork: tn2, channelId: 1n }),
        chainEvent(103n, 0, { tokenNetwork: tn1, channelId: 1n }),
        chainEvent(99n, 5, { tokenNetwork: tn1 }),
      ]
      await storage.commit({ chainEvents: rows.slice(3) })
      await storage.commit({ chainEvents: rows.slice(0, 3) })
      const at = (events: { blockNumber: bigint; logIndex: number }[]) => events.map((e) => `${e.blockNumber}:${e.logIndex}`)
      expect(at(await storage.chainEvents({}))).toEqual(['99:5', '100:1', '100:2', '101:0', '102:7', '103:0'])
      expect(await storage.chainEvents({ address: registry })).toEqual([rows[0]])
      expect(at(await storage.chainEvents({ address: tn1 }))).toEqual(['99:5', '100:1', '101:0', '103:0'])
      expect(at(await storage.chainEvents({ tokenNetwork: tn1 }))).toEqual(['99:5', '100:1', '101:0', '103:0'])
      expect(at(await storage.chainEvents({ tokenNetwork: tn1.toLowerCase() as typeof tn1 }))).toEqual(['99:5', '100:1', '101:0', '103:0'])
      expect(at(await storage.chainEvents({ channelId: 1n }))).toEqual(['100:1', '102:7', '103:0'])
      expect(at(await storage.chainEvents({ channelId: 1n, tokenNetwork: tn1 }))).toEqual(['100:1', '103:0'])
      expect(at(await storage.chainEvents({ fromBlock: 100n, toBlock: 102n }))).toEqual(['100:1', '100:2', '101:0', '102:7'])
      expect(at(await storage.chainEvents({ tokenNetwork: tn1, fromBlock: 100n, toBlock: 101n }))).toEqual(['100:1', '101:0'])
      expect(at(await storage.chainEvents({ channelId: 1n, fromBlock: 101n }))).toEqual(['102:7', '103:0'])
      expect(at(await storage.chainEvents({ address: tn1, toBlock: 99n }))).toEqual(['99:5'])
      expect(await storage.chainEvents({ fromBlock: 104n })).toEqual([])
      expect(await storage.chainEvents({ fromBlock: 102n, toBlock: 101n })).toEqual([])
      expect(await storage.chainEvents({ channelId: 3n })).toEqual([])
      expect(at(await storage.chainEvents({ fromBlock: -5n, toBlock: 2n ** 80n }))).toHaveLength(6)
      expect((await storage.chainEvents({ channelId: 2n }))[0]).toEqual(rows[2])
    })

    test('a chain event written again at its position is found only under its new token network and channel', async () => {
      const storage = await open()
      const [tn1, tn2] = [randomAddress(), randomAddress()]
      await storage.commit({ chainEvents: [chainEvent(7n, 1, { tokenNetwork: tn1, channelId: 1n })] })
      await storage.commit({ chainEvents: [chainEvent(7n, 1, { tokenNetwork: tn2 })] })
      expect(await storage.chainEvents({ tokenNetwork: tn1 })).toEqual([])
      expect(await storage.chainEvents({ channelId: 1n })).toEqual([])
      expect(await storage.chainEvents({ address: tn1 })).toEqual([])
      expect(await storage.chainEvents({ tokenNetwork: tn2 })).toHaveLength(1)
      expect(await storage.chainEvents({})).toHaveLength(1)
    })

    test('exportDump and importDump carry the whole store through JSON into an empty store', async () => {
      const identity = newIdentity()
      let storage = await open(identity)
      const all = everything(identity)
      await storage.commit(all)
      const before = { loaded: await storage.load(), dump: await storage.exportDump() }
      expect(before.dump).toMatchObject({ format: 'sluice-dump', meta: { ...identity, syncedBlock: 11n } })
      expect(before.dump.changes.map((c) => c.seq)).toEqual([1, 2, 3])
      const text = jsonStringify(before.dump)
      await storage.close()
      await adapter.destroy(identity)
      storage = await open(identity)
      expect((await storage.load()).changes).toEqual([])
      await storage.importDump(jsonParse(text) as StorageDump)
      expect(await storage.load()).toEqual(before.loaded)
      expect(sortDump(await storage.exportDump())).toEqual(sortDump(before.dump))
      // The indexes were rebuilt, not only the rows.
      expect(await storage.payments({ token: all.payments![0]!.token, partner: all.payments![1]!.partner })).toEqual([all.payments![1]])
      expect(await storage.chainEvents({ channelId: BIG })).toEqual([all.chainEvents![0]])
    })

    test('importDump refuses a dump of another node, chain or registry, or not a dump at all, and keeps the store', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit(everything(identity))
      const dump = await storage.exportDump()
      const refused = [
        { ...dump, meta: { ...dump.meta, address: randomAddress() } },
        { ...dump, meta: { ...dump.meta, chainId: 1n } },
        { ...dump, meta: { ...dump.meta, registry: randomAddress() } },
        { ...dump, meta: { ...dump.meta, schemaVersion: STORAGE_SCHEMA_VERSION + 1 } },
        { ...dump, format: 'raiden-dump' },
        JSON.parse(jsonStringify(dump)), // bigints not decoded
        { ...dump, changes: 'none' },
        { ...dump, changes: [...dump.changes, { ...change(9), seq: -1 }] },
      ]
      for (const bad of refused) await expect(storage.importDump(bad as StorageDump)).rejects.toBeInstanceOf(DumpRejectedError)
      await expect(storage.importDump({ ...dump, meta: { ...dump.meta, address: randomAddress() } })).rejects.toThrow(/another node address/)
      await expect(storage.importDump({ ...dump, meta: { ...dump.meta, chainId: 1n } })).rejects.toThrow(/another chain/)
      // The same address in other letter case is the same node.
      await storage.importDump({ ...dump, meta: { ...dump.meta, address: dump.meta.address.toLowerCase() as typeof dump.meta.address } })
      expect(sortDump(await storage.exportDump())).toEqual(sortDump({ ...dump, meta: { ...dump.meta, address: dump.meta.address.toLowerCase() as typeof dump.meta.address } }))
    })

    test('importDump refuses a dump older than the stored state, and accepts the same one again', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit({ changes: [change(1), change(2)], meta: { syncedBlock: 50n } })
      const dump = await storage.exportDump()
      await storage.importDump(dump)
      await storage.commit({ changes: [change(3)], outbox: { put: [outbox('after')] } })
      await expect(storage.importDump(dump)).rejects.toThrow(DumpRejectedError)
      await expect(storage.importDump(dump)).rejects.toThrow(/older/)
      expect((await storage.load()).outbox.map((r) => r.key)).toEqual(['after'])
      // A snapshot counts as progress too: changes pruned behind it are not missing.
      await storage.commit({ snapshot: snapshot(3, identity.address), pruneChangesUpTo: 3 })
      const newer = await storage.exportDump()
      expect(newer.changes).toEqual([])
      await expect(storage.importDump(dump)).rejects.toThrow(DumpRejectedError)
      await storage.importDump(newer)
      // Same changes but an earlier synced block is older too.
      await storage.commit({ meta: { syncedBlock: 60n } })
      await expect(storage.importDump(newer)).rejects.toThrow(/block/)
      expect((await storage.load()).meta.syncedBlock).toBe(60n)
    })

    test('a reopened store has everything it had', async () => {
      const identity = newIdentity()
      let storage = await open(identity)
      await storage.commit(everything(identity))
      await storage.commit({ changes: [change(4)], outbox: { delete: ['a'] }, events: [event(3)] })
      const before = { loaded: await storage.load(), dump: await storage.exportDump(), payments: await storage.payments({ limit: 1, offset: 1 }) }
      await storage.close()
      storage = await open(identity)
      expect(await storage.load()).toEqual(before.loaded)
      expect(sortDump(await storage.exportDump())).toEqual(sortDump(before.dump))
      expect(await storage.payments({ limit: 1, offset: 1 })).toEqual(before.payments)
      await storage.commit({ changes: [change(5)] })
      expect((await storage.load()).changes.map((c) => c.seq)).toEqual([3, 4, 5])
    })

    test('a commit that fails midway (a value that cannot be stored) leaves nothing of it', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit({ changes: [change(1)], outbox: { put: [outbox('kept')] }, meta: { syncedBlock: 5n } })
      const before = await storage.exportDump()
      const unstorable = { ...outbox('bad'), message: { type: 'Processed', message_identifier: 1n, callback: () => 1 } as unknown as Message }
      const failing: Commit = {
        ...everything(identity),
        changes: [change(2), change(3)],
        pruneChangesUpTo: 1,
        outbox: { put: [outbox('new'), unstorable], delete: ['kept'] },
        transactions: { put: [transaction('t9')] },
        meta: { syncedBlock: 99n },
      }
      await expect(storage.commit(failing)).rejects.toBeInstanceOf(StorageError)
      expect(sortDump(await storage.exportDump())).toEqual(sortDump(before))
      // Nothing half-written blocks the next commit of the same seqs.
      await storage.commit({ changes: [change(2), change(3)] })
      expect((await storage.load()).changes.map((c) => c.seq)).toEqual([1, 2, 3])
      expect((await storage.load()).meta.syncedBlock).toBe(5n)
    })

    test('a change seq that is already stored fails the whole commit: the log is append-only', async () => {
      const storage = await open()
      await storage.commit({ changes: [change(1)] })
      await expect(storage.commit({ changes: [change(2), change(1, 7n)], outbox: { put: [outbox('x')] } })).rejects.toBeInstanceOf(StorageError)
      const loaded = await storage.load()
      expect(loaded.changes).toHaveLength(1)
      expect(loaded.changes[0]!.change).toMatchObject({ totalDeposit: BIG })
      expect(loaded.outbox).toEqual([])
      await expect(storage.commit({ changes: [change(4), change(4)] })).rejects.toThrow(/twice/)
      await expect(storage.commit({ chainEvents: [chainEvent(4n, 1), chainEvent(4n, 1)] })).rejects.toThrow(/twice/)
    })

    test('stored rows are copies: changing an object once commit is called, or after load, does not change the store', async () => {
      const storage = await open()
      const record = outbox('a')
      const row = change(1)
      const meta = { syncedBlock: 4n }
      const committing = storage.commit({ changes: [row], outbox: { put: [record] }, meta })
      // Before the commit has resolved: what was committed is what the call saw.
      record.attempts = 99
      ;(row.change as { totalDeposit: bigint }).totalDeposit = 1n
      meta.syncedBlock = 5n
      await committing
      const loaded = await storage.load()
      expect(loaded.outbox[0]!.attempts).toBe(0)
      expect(loaded.changes[0]!.change).toMatchObject({ totalDeposit: BIG })
      expect(loaded.meta.syncedBlock).toBe(4n)
      loaded.outbox[0]!.attempts = 42
      expect((await storage.load()).outbox[0]!.attempts).toBe(0)
    })

    test('a commit may not move the store to another node or schema', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await expect(storage.commit({ meta: { address: randomAddress() } })).rejects.toBeInstanceOf(StorageError)
      await expect(storage.commit({ meta: { chainId: 5n } })).rejects.toBeInstanceOf(StorageError)
      await expect(storage.commit({ meta: { schemaVersion: STORAGE_SCHEMA_VERSION + 1 } })).rejects.toBeInstanceOf(StorageError)
      await expect(storage.commit({ changes: [{ ...change(1), seq: 1.5 }] })).rejects.toBeInstanceOf(StorageError)
      await expect(storage.commit({ chainEvents: [chainEvent(2n ** 60n, 0)] })).rejects.toBeInstanceOf(StorageError)
      // Repeating the identity as it is changes nothing and is allowed.
      await storage.commit({ meta: { address: identity.address.toLowerCase() as typeof identity.address, syncedBlock: 3n } })
      expect((await storage.load()).meta).toMatchObject({ address: identity.address, syncedBlock: 3n })
    })

    test('a closed store refuses every call, and closing twice is harmless', async () => {
      const storage = await open()
      await storage.close()
      await storage.close()
      for (const call of [() => storage.load(), () => storage.commit({}), () => storage.payments({}), () => storage.events({}), () => storage.chainEvents({}), () => storage.exportDump()]) {
        await expect(call()).rejects.toBeInstanceOf(StorageClosedError)
      }
    })

    if (adapter.singleInstance) {
      test('a second open of an open store fails with StorageLockedError, and opens once the first is closed', async () => {
        const identity = newIdentity()
        const first = await open(identity)
        await first.commit({ changes: [change(1)] })
        await expect(adapter.open(identity)).rejects.toBeInstanceOf(StorageLockedError)
        // Another node is not affected.
        await open(newIdentity())
        await first.close()
        const second = await open(identity)
        expect((await second.load()).changes.map((c) => c.seq)).toEqual([1])
      })
    }
  })
}

function sortByKey<T extends { key: string }>(rows: T[]): T[] {
  return [...rows].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
}

/** Outbox and transaction order is not part of the contract: compare dumps with them sorted. */
function sortDump(dump: StorageDump): StorageDump {
  return { ...dump, outbox: sortByKey(dump.outbox), transactions: sortByKey(dump.transactions) }
}
