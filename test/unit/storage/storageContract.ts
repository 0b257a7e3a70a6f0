import { afterEach, describe, expect, test } from 'vitest'
import { jsonParse, jsonStringify } from '../../../src/storage/json.ts'
import type { Message } from '../../../src/protocol/messages/types.ts'
import type { JournalEntry } from '../../../src/chain/transactionJournal.ts'
import {
  DumpRejectedError,
  STORAGE_SCHEMA_VERSION,
  StorageClosedError,
  StorageError,
  StorageLockedError,
  type Commit,
  type Loaded,
  type PaymentRecord,
  type ReceivedRecord,
  type SentLockRecord,
  type SentProofRecord,
  type Storage,
  type StorageDump,
  type StorageIdentity,
} from '../../../src/storage/storage.ts'
import {
  BIG,
  chainEvent,
  change,
  event,
  journalEntry,
  newChannelKey,
  newIdentity,
  outbox,
  payment,
  randomAddress,
  randomHash,
  received,
  sentLock,
  sentProof,
  snapshot,
  transaction,
} from './support/records.ts'

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
      const [ck1, ck2] = [CHANNEL_1, CHANNEL_2]
      return {
        sentProofs: [sentProof(ck1, 1n), sentProof(ck1, 2n), sentProof(ck2, 1n)],
        sentLocks: [sentLock(ck1, 1n), sentLock(ck1, 2n, 4n), sentLock(ck2, 3n)],
        received: [received(ck2, 1n, { type: 'WithdrawRequest' }), received(ck1, 2n, { type: 'Unlock' }), received(ck1, 1n)],
        changes: [change(1), change(2), change(3)],
        snapshot: snapshot(2, identity.address),
        events: [event(1), event(2)],
        payments: [payment(1, token, randomAddress()), payment(2, token, randomAddress())],
        chainEvents: [chainEvent(10n, 0, { channelId: BIG }), chainEvent(11n, 3)],
        outbox: { put: [outbox('a'), outbox('b')] },
        transactions: { put: [transaction('t1'), transaction('t2', 'sent')] },
        // Out of nonce order: a store lists them in it.
        chainTransactions: { put: [journalEntry(2, 2), journalEntry(0), journalEntry(1, 1, { status: 'signed' })] },
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
        chainTransactions: [],
      })
      expect(loaded.snapshot).toBeUndefined()
      expect(Math.abs(loaded.meta.createdAt - Date.now())).toBeLessThan(60_000)
    })

    test('commit then load gives back meta, snapshot, the changes after the snapshot in seq order, outbox and transactions', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      const snap = snapshot(3, identity.address)
      await storage.commit({
        changes: [change(1), change(2), change(3)],
        outbox: { put: [outbox('a'), outbox('b')] },
        transactions: { put: [transaction('t1')] },
        meta: { syncedBlock: 10n },
      })
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
      await storage.commit({
        outbox: { put: [outbox('a', 3)], delete: ['b', 'never-there'] },
        transactions: { put: [transaction('t1', 'sent')], delete: ['t2'] },
      })
      let loaded = await storage.load()
      expect(sortByKey(loaded.outbox).map((r) => [r.key, r.attempts])).toEqual([
        ['a', 3],
        ['c', 0],
      ])
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
      await storage.commit({
        changes: [],
        events: [],
        payments: [],
        chainEvents: [],
        outbox: { put: [], delete: ['a'] },
        transactions: { put: [], delete: [] },
      })
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

    test('sentPayment: the latest sent payment to a target under an identifier, from an index, however long the history', async () => {
      const storage = await open()
      const [token, target, other] = [randomAddress(), randomAddress(), randomAddress()]
      const row = (seq: number, to: string, identifier: bigint, event: PaymentRecord['event'] = 'EventPaymentSentSuccess'): PaymentRecord => ({
        ...payment(seq, token, to as typeof target),
        identifier,
        event,
      })
      // A history to look through: 2,000 other payments to the target, before and after.
      const noise = (from: number) => Array.from({ length: 1000 }, (_, i) => row(from + i, target, 1_000_000n + BigInt(from + i)))
      await storage.commit({ payments: noise(100) })
      await storage.commit({
        payments: [
          row(1, target, 5n),
          row(2, target, 5n, 'EventPaymentReceivedSuccess'),
          row(3, target, 5n, 'EventPaymentSentFailed'),
          row(4, other, 5n),
          row(5, target, 2n ** 64n - 1n),
          ...noise(2000),
        ],
      })
      expect(await storage.sentPayment(target, 5n)).toMatchObject({ seq: 3, event: 'EventPaymentSentFailed' })
      expect(await storage.sentPayment(target.toLowerCase() as typeof target, 5n)).toMatchObject({ seq: 3 })
      expect(await storage.sentPayment(other, 5n)).toMatchObject({ seq: 4 })
      expect(await storage.sentPayment(target, 2n ** 64n - 1n)).toMatchObject({ seq: 5 })
      expect(await storage.sentPayment(target, 1_000_100n)).toMatchObject({ seq: 100 })
      expect(await storage.sentPayment(target, 6n)).toBeUndefined()
      expect(await storage.sentPayment(randomAddress(), 5n)).toBeUndefined()
      // Only received under 7: not a payment we sent; nor is one we mediated, whatever its partner (its initiator).
      await storage.commit({
        payments: [row(6, target, 7n, 'EventPaymentReceivedSuccess'), { ...row(7, target, 7n, 'EventPaymentMediated'), fee: 3n, target: other }],
      })
      expect(await storage.sentPayment(target, 7n)).toBeUndefined()
      expect((await storage.payments({ partner: target })).find((p) => p.seq === 7)).toMatchObject({ event: 'EventPaymentMediated', fee: 3n, target: other })
      // A row written again under its seq leaves the index with its old terms.
      await storage.commit({ payments: [row(3, target, 8n)] })
      expect(await storage.sentPayment(target, 5n)).toMatchObject({ seq: 1 })
      expect(await storage.sentPayment(target, 8n)).toMatchObject({ seq: 3, event: 'EventPaymentSentSuccess' })
      await storage.commit({ payments: [row(1, target, 5n, 'EventPaymentReceivedSuccess')] })
      expect(await storage.sentPayment(target, 5n)).toBeUndefined()
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
      expect(await storage.sentProof(CHANNEL_1, all.sentProofs![1]!.balanceHash)).toEqual(all.sentProofs![1])
      expect(await storage.sentLocks(CHANNEL_1, 3n)).toEqual(all.sentLocks!.slice(0, 2))
      expect(await storage.sentLocks(CHANNEL_2, 3n)).toEqual([all.sentLocks![2]])
      expect(before.dump.received).toEqual([...all.received!].sort(byChannelThenNonce))
      for (const r of all.received!) expect(await storage.receivedMessage(r.channelKey, r.nonce)).toEqual(r)
      // The transaction journal, in nonce order, with its bigints.
      expect(before.dump.chainTransactions).toEqual([journalEntry(0), journalEntry(1, 1, { status: 'signed' }), journalEntry(2, 2)])
      expect((await storage.load()).chainTransactions).toEqual(before.dump.chainTransactions)
    })

    test('exportDump({recovery: true}) reads only the meta, the outbox and the transactions', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit(everything(identity))
      const whole = sortDump(await storage.exportDump())
      const recovery = sortDump(await storage.exportDump({ recovery: true }))
      expect(whole.events.length * whole.payments.length * whole.chainEvents.length * whole.received!.length * whole.changes.length).toBeGreaterThan(0)
      expect(whole.sentProofs!.length * whole.sentLocks!.length * whole.outbox.length * whole.transactions.length).toBeGreaterThan(0)
      expect(whole.chainTransactions).toHaveLength(3)
      const { snapshot: _, ...rest } = whole
      // Not the transaction journal either: a backup copy does not carry it (docs/decisions/0051).
      expect(recovery).toEqual({
        ...rest,
        changes: [],
        events: [],
        payments: [],
        chainEvents: [],
        sentProofs: [],
        sentLocks: [],
        received: [],
        chainTransactions: [],
      })
    })

    test('importDump takes a dump of schema version 1 (no sent proofs or locks) and stores it as this version', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit({ changes: [change(1)], meta: { syncedBlock: 3n } })
      const { sentProofs: _p, sentLocks: _l, received: _r, ...rest } = await storage.exportDump()
      const v1: StorageDump = { ...rest, meta: { ...rest.meta, schemaVersion: 1 }, changes: [change(1), change(2)] }
      await storage.importDump(v1)
      const dump = await storage.exportDump()
      expect(dump.meta.schemaVersion).toBe(STORAGE_SCHEMA_VERSION)
      expect(dump.changes.map((c) => c.seq)).toEqual([1, 2])
      expect(dump.sentProofs).toEqual([])
      expect(dump.sentLocks).toEqual([])
      expect(dump.received).toEqual([])
      expect(dump.chainTransactions).toEqual([])
      expect((await storage.load()).meta.schemaVersion).toBe(STORAGE_SCHEMA_VERSION)
      await storage.commit({ sentProofs: [sentProof(CHANNEL_1, 1n)] })
      await expect(storage.importDump({ ...v1, meta: { ...v1.meta, schemaVersion: 0 } })).rejects.toBeInstanceOf(DumpRejectedError)
    })

    test('importDump takes a dump of schema version 2 (no received messages): it keeps none of those the store had', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit(everything(identity))
      const { received: had, chainTransactions: _j, ...rest } = await storage.exportDump()
      expect(had).toHaveLength(3)
      const v2: StorageDump = { ...rest, meta: { ...rest.meta, schemaVersion: 2 } }
      await storage.importDump(jsonParse(jsonStringify(v2)) as StorageDump)
      const dump = await storage.exportDump()
      expect(dump.meta.schemaVersion).toBe(STORAGE_SCHEMA_VERSION)
      expect(dump.received).toEqual([])
      expect(sortDump(dump)).toEqual(sortDump({ ...v2, meta: { ...v2.meta, schemaVersion: STORAGE_SCHEMA_VERSION }, received: [], chainTransactions: [] }))
      for (const r of had!) expect(await storage.receivedMessage(r.channelKey, r.nonce)).toBeUndefined()
      // The store takes new ones as usual.
      const next = received(CHANNEL_1, 3n)
      await storage.commit({ received: [next] })
      expect(await storage.receivedMessage(CHANNEL_1, 3n)).toEqual(next)
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
        { ...dump, sentLocks: 'none' },
        { ...dump, sentProofs: [...dump.sentProofs!, { ...sentProof(CHANNEL_1, 1n), nonce: 1 }] },
        { ...dump, sentLocks: [...dump.sentLocks!, { ...sentLock(CHANNEL_1, 1n), secrethash: '0x12' }] },
        { ...dump, received: 'none' },
        { ...dump, received: [...dump.received!, 7] },
        { ...dump, received: [...dump.received!, { ...received(CHANNEL_1, 9n), signature: '0x12' }] },
        { ...dump, received: [...dump.received!, { ...received(CHANNEL_1, 9n), nonce: 0n }] },
        { ...dump, chainTransactions: 'none' },
        { ...dump, chainTransactions: [...dump.chainTransactions!, { ...journalEntry(7), nonce: -1 }] },
        { ...dump, chainTransactions: [...dump.chainTransactions!, { ...journalEntry(7), gas: 7 }] },
      ]
      for (const bad of refused) await expect(storage.importDump(bad as StorageDump)).rejects.toBeInstanceOf(DumpRejectedError)
      await expect(storage.importDump({ ...dump, meta: { ...dump.meta, address: randomAddress() } })).rejects.toThrow(/another node address/)
      await expect(storage.importDump({ ...dump, meta: { ...dump.meta, chainId: 1n } })).rejects.toThrow(/another chain/)
      // The same address in other letter case is the same node.
      await storage.importDump({ ...dump, meta: { ...dump.meta, address: dump.meta.address.toLowerCase() as typeof dump.meta.address } })
      expect(sortDump(await storage.exportDump())).toEqual(
        sortDump({ ...dump, meta: { ...dump.meta, address: dump.meta.address.toLowerCase() as typeof dump.meta.address } }),
      )
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
      const all = before.dump
      for (const p of all.sentProofs!) expect(await storage.sentProof(p.channelKey, p.balanceHash)).toEqual(p)
      expect((await storage.sentLocks(CHANNEL_1, 2n)).map((l) => l.addedNonce)).toEqual([1n, 2n])
      expect((await storage.sentLocks(CHANNEL_1, 4n)).map((l) => l.addedNonce)).toEqual([1n])
      for (const r of all.received!) expect(await storage.receivedMessage(r.channelKey, r.nonce)).toEqual(r)
      await storage.commit({ changes: [change(5)] })
      expect((await storage.load()).changes.map((c) => c.seq)).toEqual([3, 4, 5])
    })

    test('a relaxed commit is stored as any other, in order with the commits around it, and is there when the store is reopened', async () => {
      const identity = newIdentity()
      let storage = await open(identity)
      await storage.commit({ changes: [change(1)], outbox: { put: [outbox('a'), outbox('b')] } })
      await storage.commit({ relaxed: true, outbox: { delete: ['a'] } })
      await storage.commit({ changes: [change(2)], outbox: { put: [outbox('c')] } })
      await storage.commit({ relaxed: true, outbox: { delete: ['c'] } })
      const expected = { changes: [1, 2], outbox: ['b'] }
      const seen = (loaded: Loaded) => ({ changes: loaded.changes.map((c) => c.seq), outbox: loaded.outbox.map((r) => r.key) })
      expect(seen(await storage.load())).toEqual(expected)
      await storage.close()
      storage = await open(identity)
      expect(seen(await storage.load())).toEqual(expected)
    })

    test('a commit that fails midway (a value that cannot be stored) leaves nothing of it', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit({
        changes: [change(1)],
        outbox: { put: [outbox('kept')] },
        chainTransactions: { put: [journalEntry(5)] },
        meta: { syncedBlock: 5n },
      })
      const before = await storage.exportDump()
      const unstorable = { ...outbox('bad'), message: { type: 'Processed', message_identifier: 1n, callback: () => 1 } as unknown as Message }
      const failing: Commit = {
        ...everything(identity),
        changes: [change(2), change(3)],
        pruneChangesUpTo: 1,
        outbox: { put: [outbox('new'), unstorable], delete: ['kept'] },
        transactions: { put: [transaction('t9')] },
        chainTransactions: { put: [journalEntry(6)], delete: [5] },
        meta: { syncedBlock: 99n },
      }
      await expect(storage.commit(failing)).rejects.toBeInstanceOf(StorageError)
      expect(sortDump(await storage.exportDump())).toEqual(sortDump(before))
      expect((await storage.load()).chainTransactions).toEqual([journalEntry(5)])
      expect(await storage.sentProof(CHANNEL_1, failing.sentProofs![0]!.balanceHash)).toBeUndefined()
      expect(await storage.sentLocks(CHANNEL_1, 10n)).toEqual([])
      expect(await storage.receivedMessage(CHANNEL_1, 1n)).toBeUndefined()
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

    test('the append-only check holds for a store reopened and for one that imported a dump: a seq it holds is refused, and only that', async () => {
      const identity = newIdentity()
      let storage = await open(identity)
      await storage.commit({ changes: [change(1), change(2), change(3)] })
      const dump = await storage.exportDump()
      await storage.close()
      storage = await open(identity)
      // Seqs below the last one and the last one itself, each alone and beside a new one.
      for (const seqs of [[2], [3], [4, 3], [1, 4]]) {
        await expect(storage.commit({ changes: seqs.map((s) => change(s)) })).rejects.toBeInstanceOf(StorageError)
      }
      expect((await storage.load()).changes.map((c) => c.seq)).toEqual([1, 2, 3])
      await storage.commit({ changes: [change(4)] })
      await expect(storage.commit({ changes: [change(4)] })).rejects.toBeInstanceOf(StorageError)
      // A store that had committed less imports the dump: the dump's seqs are refused from then on.
      await storage.close()
      await adapter.destroy(identity)
      storage = await open(identity)
      await storage.commit({ changes: [change(1)] })
      await storage.importDump(dump)
      await expect(storage.commit({ changes: [change(3)] })).rejects.toBeInstanceOf(StorageError)
      await storage.commit({ changes: [change(4)] })
      expect((await storage.load()).changes.map((c) => c.seq)).toEqual([1, 2, 3, 4])
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
      for (const call of [
        () => storage.load(),
        () => storage.commit({}),
        () => storage.payments({}),
        () => storage.events({}),
        () => storage.chainEvents({}),
        () => storage.sentProof(CHANNEL_1, randomHash()),
        () => storage.sentLocks(CHANNEL_1, 1n),
        () => storage.receivedMessage(CHANNEL_1, 1n),
        () => storage.exportDump(),
      ]) {
        await expect(call()).rejects.toBeInstanceOf(StorageClosedError)
      }
    })

    test('sent proofs are put, replaced under their channel and balance hash, and found by them', async () => {
      const storage = await open()
      const [ck1, ck2] = [newChannelKey(), newChannelKey()]
      const first = sentProof(ck1, 1n)
      const sameHashOtherChannel = sentProof(ck2, 7n, { balanceHash: first.balanceHash })
      await storage.commit({ sentProofs: [first, sentProof(ck1, 2n), sameHashOtherChannel] })
      expect(await storage.sentProof(ck1, first.balanceHash)).toEqual(first)
      expect(await storage.sentProof(ck2, first.balanceHash)).toEqual(sameHashOtherChannel)
      // The balance hash in other letter case is the same key.
      expect(await storage.sentProof(ck1, first.balanceHash.toUpperCase().replace('0X', '0x') as typeof first.balanceHash)).toEqual(first)
      expect(await storage.sentProof(ck1, randomHash())).toBeUndefined()
      expect(await storage.sentProof(newChannelKey(), first.balanceHash)).toBeUndefined()
      // Recorded again (the same proof, or other fields under the same key): replaced, not duplicated.
      await storage.commit({ sentProofs: [first] })
      const replaced = { ...first, transferredAmount: 5n, nonce: 2n ** 64n - 1n }
      await storage.commit({ sentProofs: [replaced] })
      expect(await storage.sentProof(ck1, first.balanceHash)).toEqual(replaced)
      expect((await storage.exportDump()).sentProofs).toHaveLength(3)
      // A copy: changing what came back does not change the store.
      const got = (await storage.sentProof(ck1, first.balanceHash))!
      got.nonce = 0n
      expect((await storage.sentProof(ck1, first.balanceHash))!.nonce).toBe(2n ** 64n - 1n)
    })

    test('sentLocks gives the locks of a channel alive at a nonce, ordered by addedNonce then secret hash', async () => {
      const storage = await open()
      const [ck, other] = [newChannelKey(), newChannelKey()]
      const hashes = Array.from({ length: 3 }, randomHash).sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))
      const never = sentLock(ck, 1n)
      const removedAfter = sentLock(ck, 3n, 9n)
      const removedAt = sentLock(ck, 2n, 5n)
      const removedBefore = sentLock(ck, 1n, 4n)
      const atNonce = sentLock(ck, 5n)
      const later = sentLock(ck, 6n)
      // Same addedNonce: by secret hash; 9 < 10 < 100 as numbers, not as strings.
      const tie = [sentLock(ck, 4n, undefined, hashes[2]!), sentLock(ck, 4n, undefined, hashes[0]!), sentLock(ck, 4n, 12n, hashes[1]!)]
      const nine = sentLock(ck, 9n)
      const ten = sentLock(ck, 10n)
      const hundred = sentLock(ck, 100n)
      const otherChannel = [sentLock(other, 1n), sentLock(other, 4n)]
      // Written out of order, over several commits; removedAfter and removedAt first without their removedNonce.
      const { removedNonce: _a, ...removedAtAdded } = removedAt
      const { removedNonce: _b, ...removedAfterAdded } = removedAfter
      await storage.commit({ sentLocks: [hundred, later, ...tie, otherChannel[0]!, removedAtAdded] })
      await storage.commit({ sentLocks: [ten, atNonce, never, nine, removedBefore, otherChannel[1]!] })
      await storage.commit({ sentLocks: [{ ...removedAfter }] })
      await storage.commit({ sentLocks: [removedAfterAdded] })
      expect(await storage.sentLocks(ck, 3n)).toEqual(sortLocks([never, removedBefore, removedAtAdded, removedAfterAdded]))
      expect(await storage.sentLocks(ck, 9n)).toContainEqual(removedAfterAdded)
      // Written again with their removedNonce: replaced.
      await storage.commit({ sentLocks: [removedAt, removedAfter] })
      const byHash = [tie[1]!, tie[2]!, tie[0]!]
      // At 5: removedAt (removed exactly at 5) is not alive, nor removedBefore; atNonce (added at 5) is.
      expect(await storage.sentLocks(ck, 5n)).toEqual([never, removedAfter, ...byHash, atNonce])
      expect(await storage.sentLocks(ck, 4n)).toEqual([never, removedAt, removedAfter, ...byHash])
      expect(await storage.sentLocks(ck, 0n)).toEqual([])
      expect(await storage.sentLocks(ck, -1n)).toEqual([])
      expect(await storage.sentLocks(ck, 12n)).toEqual([never, tie[1], tie[0], atNonce, later, nine, ten])
      expect(await storage.sentLocks(ck, 2n ** 80n)).toEqual([never, tie[1], tie[0], atNonce, later, nine, ten, hundred])
      expect(await storage.sentLocks(other, 4n)).toEqual(otherChannel)
      expect(await storage.sentLocks(newChannelKey(), 4n)).toEqual([])
      expect((await storage.exportDump()).sentLocks).toHaveLength(14)
      await expect(storage.sentLocks(ck, 4 as unknown as bigint)).rejects.toBeInstanceOf(StorageError)
      await expect(storage.sentLocks('', 4n)).rejects.toBeInstanceOf(StorageError)
      await expect(storage.sentProof(ck, '0x12')).rejects.toBeInstanceOf(StorageError)
    })

    test('nonces over the whole uint64 range are ordered numerically', async () => {
      const storage = await open()
      const ck = newChannelKey()
      const max = 2n ** 64n - 1n
      const locks = [sentLock(ck, max), sentLock(ck, 2n ** 63n, max), sentLock(ck, 2n ** 32n), sentLock(ck, 0n, 1n)]
      await storage.commit({ sentLocks: locks })
      expect(await storage.sentLocks(ck, max)).toEqual([locks[2], locks[0]])
      expect(await storage.sentLocks(ck, max - 1n)).toEqual([locks[2], locks[1]])
      expect(await storage.sentLocks(ck, 0n)).toEqual([locks[3]])
    })

    test('a lock added and removed in one commit is stored as the last put says, with the rest of the commit', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      const ck = newChannelKey()
      const { removedNonce: _, ...added } = sentLock(ck, 3n, 4n)
      const proof = sentProof(ck, 3n)
      await storage.commit({ changes: [change(1)], sentProofs: [proof, proof], sentLocks: [added, { ...added, removedNonce: 4n }], meta: { syncedBlock: 2n } })
      expect(await storage.sentLocks(ck, 3n)).toEqual([{ ...added, removedNonce: 4n }])
      expect(await storage.sentLocks(ck, 4n)).toEqual([])
      expect(await storage.sentProof(ck, proof.balanceHash)).toEqual(proof)
      expect((await storage.load()).changes).toEqual([change(1)])
    })

    test('sent proofs and locks that no adapter could key are refused, and the commit writes nothing', async () => {
      const storage = await open()
      const ck = newChannelKey()
      const bad: [SentProofRecord[], SentLockRecord[]][] = [
        [[{ ...sentProof(ck, 1n), nonce: 1 as unknown as bigint }], []],
        [[{ ...sentProof(ck, 1n), nonce: 2n ** 64n }], []],
        [[{ ...sentProof(ck, 1n), balanceHash: '0xabc' }], []],
        [[{ ...sentProof(ck, 1n), locksroot: 'zz' as SentProofRecord['locksroot'] }], []],
        [[{ ...sentProof(ck, 1n), transferredAmount: -1n }], []],
        [[{ ...sentProof(ck, 1n), channelKey: '' }], []],
        [[], [{ ...sentLock(ck, 1n), addedNonce: 1 as unknown as bigint }]],
        [[], [{ ...sentLock(ck, 1n), addedNonce: -1n }]],
        [[], [{ ...sentLock(ck, 1n), amount: 2n ** 256n }]],
        [[], [{ ...sentLock(ck, 1n), expiration: '5' as unknown as bigint }]],
        [[], [sentLock(ck, 3n, 3n)]],
        [[], [{ ...sentLock(ck, 1n), removedNonce: 4 as unknown as bigint }]],
        [[], [{ ...sentLock(ck, 1n), secrethash: '0x' }]],
        [[], [{ ...sentLock(ck, 1n), channelKey: 7 as unknown as string }]],
      ]
      const good = sentProof(ck, 1n)
      for (const [sentProofs, sentLocks] of bad) {
        await expect(
          storage.commit({ changes: [change(1)], sentProofs: [good, ...sentProofs], sentLocks: [sentLock(ck, 1n), ...sentLocks] }),
        ).rejects.toBeInstanceOf(StorageError)
      }
      expect((await storage.load()).changes).toEqual([])
      expect(await storage.sentProof(ck, good.balanceHash)).toBeUndefined()
      expect(await storage.sentLocks(ck, 5n)).toEqual([])
    })

    test('received messages are put, replaced under their channel and nonce, found by them, and dumped by channel then nonce', async () => {
      const storage = await open()
      const [ck1, ck2] = [newChannelKey(), newChannelKey()].sort() as [string, string]
      const max = 2n ** 64n - 1n
      // 9 < 10 < 100 < 2^64 - 1 as numbers, not as strings; written out of order, over several commits.
      const rows = [received(ck1, 100n), received(ck1, 9n, { type: 'LockExpired' }), received(ck2, 1n), received(ck1, max), received(ck1, 10n)]
      const first = rows[1]!
      const committing = storage.commit({ received: rows.slice(0, 3) })
      // What the call saw is what is stored, even when the caller changes its objects before the commit resolves.
      first.type = 'Changed'
      await committing
      first.type = 'LockExpired'
      await storage.commit({ received: rows.slice(3) })
      for (const r of rows) expect(await storage.receivedMessage(r.channelKey, r.nonce)).toEqual(r)
      // Nothing under another nonce or channel, nor where no nonce can be.
      expect(await storage.receivedMessage(ck1, 1n)).toBeUndefined()
      expect(await storage.receivedMessage(ck2, 9n)).toBeUndefined()
      expect(await storage.receivedMessage(newChannelKey(), 9n)).toBeUndefined()
      for (const nonce of [0n, -1n, 2n ** 64n, 2n ** 80n]) expect(await storage.receivedMessage(ck1, nonce)).toBeUndefined()
      expect((await storage.exportDump()).received).toEqual([rows[1], rows[4], rows[0], rows[3], rows[2]])
      // Written again under its key: replaced, not duplicated.
      const replaced = received(ck1, 9n, { type: 'WithdrawExpired' })
      await storage.commit({ received: [replaced] })
      expect(await storage.receivedMessage(ck1, 9n)).toEqual(replaced)
      expect((await storage.exportDump()).received).toEqual([replaced, rows[4], rows[0], rows[3], rows[2]])
      // A copy: changing what came back does not change the store.
      const got = (await storage.receivedMessage(ck1, 9n))!
      got.type = 'Changed'
      expect((await storage.receivedMessage(ck1, 9n))!.type).toBe('WithdrawExpired')
    })

    test('a channel key of any characters keeps its own records, and the dump is in string order of the channel keys', async () => {
      const storage = await open()
      // A space sorts before the `!` that ends a LevelDB key's channel part; the others are multi-byte in UTF-8.
      const keys = ['k', 'k b', 'k!00000000000000000001', 'ключ', '\u{1F600}', '\uFFFF']
      const rows = keys.flatMap((ck) => [received(ck, 1n), received(ck, 2n)])
      await storage.commit({ received: [...rows].reverse() })
      for (const r of rows) expect(await storage.receivedMessage(r.channelKey, r.nonce)).toEqual(r)
      expect(await storage.receivedMessage('k!00000000000000000001', 3n)).toBeUndefined()
      expect((await storage.exportDump()).received).toEqual([...rows].sort(byChannelThenNonce))
    })

    test('the same channel and nonce twice in one commit: the last one is stored, with the rest of the commit', async () => {
      const storage = await open()
      const ck = newChannelKey()
      const [earlier, later] = [received(ck, 4n), received(ck, 4n, { type: 'Unlock' })]
      await storage.commit({ changes: [change(1)], received: [earlier, received(ck, 5n), later], meta: { syncedBlock: 2n } })
      expect(await storage.receivedMessage(ck, 4n)).toEqual(later)
      expect((await storage.exportDump()).received!.map((r) => r.nonce)).toEqual([4n, 5n])
      expect((await storage.load()).changes).toEqual([change(1)])
    })

    test('received messages that no adapter could key or read back are refused, and the commit writes nothing', async () => {
      const storage = await open()
      const ck = newChannelKey()
      const good = received(ck, 1n)
      const bad: unknown[] = [
        { ...received(ck, 2n), channelKey: '' },
        { ...received(ck, 2n), channelKey: 7 },
        { ...received(ck, 2n), nonce: 0n },
        { ...received(ck, 2n), nonce: -1n },
        { ...received(ck, 2n), nonce: 2n ** 64n },
        { ...received(ck, 2n), nonce: 2 },
        { ...received(ck, 2n), type: '' },
        { ...received(ck, 2n), type: undefined },
        { ...received(ck, 2n), signed: '0xabc' },
        { ...received(ck, 2n), signed: 'abcd' },
        { ...received(ck, 2n), signed: '0xzz' },
        { ...received(ck, 2n), signature: `0x${'ab'.repeat(64)}` },
        { ...received(ck, 2n), signature: `0x${'ab'.repeat(66)}` },
        { ...received(ck, 2n), signature: 42 },
        null,
      ]
      for (const row of bad) {
        await expect(storage.commit({ changes: [change(1)], received: [good, row as ReceivedRecord] })).rejects.toBeInstanceOf(StorageError)
      }
      // Well formed but holding what no store can keep: it fails when written, and takes the rest of the commit with it.
      const unstorable = { ...received(ck, 2n), note: () => 1 } as ReceivedRecord
      await expect(storage.commit({ changes: [change(1)], received: [good, unstorable] })).rejects.toBeInstanceOf(StorageError)
      expect((await storage.load()).changes).toEqual([])
      expect(await storage.receivedMessage(ck, 1n)).toBeUndefined()
      expect((await storage.exportDump()).received).toEqual([])
      // An upper-case hex signature and empty signed bytes are well formed.
      const upper = received(ck, 3n, { signed: '0x', signature: `0x${'AB'.repeat(65)}` })
      await storage.commit({ received: [upper] })
      expect(await storage.receivedMessage(ck, 3n)).toEqual(upper)
    })

    test('receivedMessage refuses a channel key or nonce it could not look up', async () => {
      const storage = await open()
      await expect(storage.receivedMessage('', 1n)).rejects.toBeInstanceOf(StorageError)
      await expect(storage.receivedMessage(7 as unknown as string, 1n)).rejects.toBeInstanceOf(StorageError)
      await expect(storage.receivedMessage(newChannelKey(), 1 as unknown as bigint)).rejects.toBeInstanceOf(StorageError)
      await expect(storage.receivedMessage(newChannelKey(), '1' as unknown as bigint)).rejects.toBeInstanceOf(StorageError)
    })

    test('journal entries are put, replaced and deleted by nonce, and load and the dump list them in nonce order', async () => {
      const identity = newIdentity()
      let storage = await open(identity)
      // 9 < 10 < 100 < 2^53 - 1 as numbers, not as strings; written out of order, over several commits.
      const max = Number.MAX_SAFE_INTEGER
      const first = journalEntry(10)
      const committing = storage.commit({ chainTransactions: { put: [journalEntry(100), first, journalEntry(max)] } })
      // What the call saw is what is stored, even when the caller changes its objects before the commit resolves.
      first.status = 'mined'
      first.attempts[0]!.fees = { gasPrice: 1n }
      await committing
      await storage.commit({ chainTransactions: { put: [journalEntry(9), journalEntry(0, 1, { status: 'signed' })] } })
      const nonces = async () => (await storage.load()).chainTransactions.map((e) => e.nonce)
      expect(await nonces()).toEqual([0, 9, 10, 100, max])
      expect((await storage.load()).chainTransactions[2]).toEqual(journalEntry(10))
      // Put again under its nonce (a second attempt at a higher fee, then mined): replaced, not duplicated.
      const mined = journalEntry(10, 2, {
        status: 'mined',
        mined: { hash: journalEntry(10, 2).attempts[1]!.hash, blockNumber: 2n ** 63n, blockHash: randomHash() },
      })
      await storage.commit({ chainTransactions: { put: [journalEntry(10, 2)] } })
      await storage.commit({ chainTransactions: { put: [mined] } })
      expect((await storage.load()).chainTransactions).toEqual([
        journalEntry(0, 1, { status: 'signed' }),
        journalEntry(9),
        mined,
        journalEntry(100),
        journalEntry(max),
      ])
      // Deleted (one never there too); put and deleted in one commit: gone; the same nonce twice in one commit: the last.
      await storage.commit({ chainTransactions: { put: [journalEntry(11)], delete: [9, 11, 12] } })
      await storage.commit({ chainTransactions: { put: [journalEntry(100, 1), journalEntry(100, 3)], delete: [0] } })
      const expected = [mined, journalEntry(100, 3), journalEntry(max)]
      expect((await storage.load()).chainTransactions).toEqual(expected)
      expect((await storage.exportDump()).chainTransactions).toEqual(expected)
      // A copy: changing what came back does not change the store.
      ;(await storage.load()).chainTransactions[0]!.attempts.pop()
      expect((await storage.load()).chainTransactions[0]).toEqual(mined)
      // Durable: a reopened store has them.
      await storage.close()
      storage = await open(identity)
      expect((await storage.load()).chainTransactions).toEqual(expected)
      // An entry of a legacy chain (a gas price), a contract creation (no `to`, no value), no deadline.
      const { to: _t, value: _v, ...creation } = journalEntry(1).call
      const { deadline: _d, ...legacy } = journalEntry(1, 1, { call: creation })
      legacy.attempts = legacy.attempts.map((a) => ({ ...a, fees: { gasPrice: 3n * 10n ** 9n } }))
      await storage.commit({ chainTransactions: { put: [legacy] } })
      expect((await storage.load()).chainTransactions[0]).toEqual(legacy)
    })

    test('journal entries are written with the rest of the commit: a commit that fails writes none of them', async () => {
      const storage = await open()
      await storage.commit({ changes: [change(1)], chainTransactions: { put: [journalEntry(3)] } })
      const unstorable = { ...outbox('bad'), message: { type: 'Processed', message_identifier: 1n, callback: () => 1 } as unknown as Message }
      // Refused when written (a value no store can keep), and refused before (a change seq already in the log).
      await expect(
        storage.commit({ changes: [change(2)], outbox: { put: [unstorable] }, chainTransactions: { put: [journalEntry(4), journalEntry(3, 2)] } }),
      ).rejects.toBeInstanceOf(StorageError)
      await expect(storage.commit({ changes: [change(1)], chainTransactions: { put: [journalEntry(4)], delete: [3] } })).rejects.toBeInstanceOf(StorageError)
      expect((await storage.load()).chainTransactions).toEqual([journalEntry(3)])
      expect((await storage.load()).changes.map((c) => c.seq)).toEqual([1])
      // And an entry no store can keep takes the commit's other parts with it.
      const withFunction = { ...journalEntry(4), note: () => 1 } as JournalEntry
      await expect(storage.commit({ changes: [change(2)], outbox: { put: [outbox('a')] }, chainTransactions: { put: [withFunction] } })).rejects.toBeInstanceOf(
        StorageError,
      )
      const loaded = await storage.load()
      expect([loaded.changes.length, loaded.outbox.length, loaded.chainTransactions.length]).toEqual([1, 0, 1])
      // Journal writes alone are a commit like any other.
      await storage.commit({ chainTransactions: { put: [journalEntry(4)] } })
      expect((await storage.load()).chainTransactions.map((e) => e.nonce)).toEqual([3, 4])
    })

    test('journal entries that no store could key, or a queue could not trust, are refused, and the commit writes nothing', async () => {
      const storage = await open()
      const e = journalEntry(1)
      const attempt = e.attempts[0]!
      const bad: unknown[] = [
        null,
        [],
        { ...e, nonce: -1 },
        { ...e, nonce: 1.5 },
        { ...e, nonce: 2 ** 53 },
        { ...e, nonce: 1n },
        { ...e, nonce: '1' },
        { ...e, call: undefined },
        { ...e, call: { ...e.call, to: '0x1234' } },
        { ...e, call: { ...e.call, data: '0xabc' } },
        { ...e, call: { ...e.call, data: undefined } },
        { ...e, call: { ...e.call, value: -1n } },
        { ...e, call: { ...e.call, value: 5 } },
        { ...e, call: { ...e.call, description: undefined } },
        { ...e, gas: 21000 },
        { ...e, gas: 2n ** 64n },
        { ...e, deadline: 5 },
        { ...e, attempts: 'none' },
        { ...e, attempts: [null] },
        { ...e, attempts: [{ ...attempt, hash: '0x12' }] },
        { ...e, attempts: [{ ...attempt, raw: '0x' }] },
        { ...e, attempts: [{ ...attempt, raw: 'f86c' }] },
        { ...e, attempts: [{ ...attempt, fees: { maxFeePerGas: 1n } }] },
        { ...e, attempts: [{ ...attempt, fees: { gasPrice: 1 } }] },
        { ...e, attempts: [{ ...attempt, fees: undefined }] },
        { ...e, attempts: [{ ...attempt, signedAtBlock: 1 }] },
        { ...e, status: 'pending' },
        { ...e, mined: { hash: attempt.hash, blockNumber: 1 } },
        { ...e, mined: { hash: attempt.hash, blockNumber: 1n, blockHash: '0x' } },
        { ...e, createdAt: Number.NaN },
        { ...e, createdAt: undefined },
      ]
      for (const entry of bad) {
        await expect(storage.commit({ changes: [change(1)], chainTransactions: { put: [journalEntry(0), entry as JournalEntry] } })).rejects.toBeInstanceOf(
          StorageError,
        )
      }
      for (const nonce of [-1, 0.5, '2', 2n, undefined, 2 ** 53]) {
        await expect(storage.commit({ changes: [change(1)], chainTransactions: { delete: [nonce as number] } })).rejects.toBeInstanceOf(StorageError)
      }
      expect((await storage.load()).changes).toEqual([])
      expect((await storage.load()).chainTransactions).toEqual([])
      // The largest safe nonce, upper-case hex and a status of every kind are well formed.
      const upper = journalEntry(Number.MAX_SAFE_INTEGER, 1, { status: 'mined' })
      upper.attempts[0]!.raw = upper.attempts[0]!.raw.toUpperCase().replace('0X', '0x') as typeof attempt.raw
      await storage.commit({ chainTransactions: { put: [upper, journalEntry(0, 1, { status: 'signed' })] } })
      expect((await storage.load()).chainTransactions).toEqual([journalEntry(0, 1, { status: 'signed' }), upper])
    })

    test('importDump takes a dump of schema version 4 (no transaction journal): the store keeps no entry it had', async () => {
      const identity = newIdentity()
      const storage = await open(identity)
      await storage.commit(everything(identity))
      const { chainTransactions: had, ...v4 } = await storage.exportDump()
      expect(had).toHaveLength(3)
      await storage.importDump(jsonParse(jsonStringify({ ...v4, meta: { ...v4.meta, schemaVersion: 4 } })) as StorageDump)
      expect((await storage.load()).chainTransactions).toEqual([])
      expect((await storage.exportDump()).chainTransactions).toEqual([])
      expect((await storage.load()).meta.schemaVersion).toBe(STORAGE_SCHEMA_VERSION)
      await storage.commit({ chainTransactions: { put: [journalEntry(7)] } })
      expect((await storage.load()).chainTransactions).toEqual([journalEntry(7)])
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

/** Channels of the rows `everything` makes. */
const CHANNEL_1 = newChannelKey()
const CHANNEL_2 = newChannelKey()

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** The order of received messages in a dump (part of the contract). */
function byChannelThenNonce(a: ReceivedRecord, b: ReceivedRecord): number {
  return compare(a.channelKey, b.channelKey) || (a.nonce < b.nonce ? -1 : a.nonce > b.nonce ? 1 : 0)
}

function sortLocks(locks: SentLockRecord[]): SentLockRecord[] {
  return [...locks].sort(
    (a, b) =>
      compare(a.channelKey, b.channelKey) ||
      (a.addedNonce < b.addedNonce ? -1 : a.addedNonce > b.addedNonce ? 1 : 0) ||
      compare(a.secrethash.toLowerCase(), b.secrethash.toLowerCase()),
  )
}

/** The order of outbox, transactions, sent proofs and sent locks in a dump is not part of the contract: compare dumps with them sorted. */
function sortDump(dump: StorageDump): StorageDump {
  return {
    ...dump,
    outbox: sortByKey(dump.outbox),
    transactions: sortByKey(dump.transactions),
    sentProofs: [...(dump.sentProofs ?? [])].sort(
      (a, b) => compare(a.channelKey, b.channelKey) || compare(a.balanceHash.toLowerCase(), b.balanceHash.toLowerCase()),
    ),
    sentLocks: sortLocks(dump.sentLocks ?? []),
  }
}
