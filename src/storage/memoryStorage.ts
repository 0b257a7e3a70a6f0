import { checkCommit } from './checkCommit.ts'
import { checkDump, progressOf } from './dump.ts'
import { checkIdentity, storageName } from './identity.ts'
import { initialMeta, mergeMeta } from './meta.ts'
import type { Address, Hex } from 'viem'
import type { JournalEntry } from '../chain/transactionJournal.ts'
import { byNonce } from './journalRecords.ts'
import { blockSpan, chainEventMatches, checkPage, paymentMatches } from './queries.ts'
import { byReceivedKey, receivedQuery } from './receivedRecords.ts'
import { byAdded, byProofKey, hashKey, lockAlive, lockSuffix, sentLocksQuery, sentProofQuery } from './sentRecords.ts'
import {
  StorageClosedError,
  StorageError,
  StorageLockedError,
  isSentPayment,
  type ChainEventQuery,
  type Commit,
  type Loaded,
  type Meta,
  type OutboxRecord,
  type PaymentQuery,
  type PaymentRecord,
  type ReceivedRecord,
  type SentLockRecord,
  type SentProofRecord,
  type Snapshot,
  type Storage,
  type StorageDump,
  type DumpOptions,
  type StorageIdentity,
  type StoredChainEvent,
  type StoredChange,
  type StoredEvent,
  type TransactionRecord,
} from './storage.ts'

type MemoryData = {
  meta: Meta
  snapshot?: Snapshot
  changes: Map<number, StoredChange>
  events: Map<number, StoredEvent>
  payments: Map<number, PaymentRecord>
  chainEvents: Map<string, StoredChainEvent>
  outbox: Map<string, OutboxRecord>
  transactions: Map<string, TransactionRecord>
  /** By channel, then lower-case balance hash. */
  sentProofs: Map<string, Map<string, SentProofRecord>>
  /** By channel, then `<addedNonce padded>!<secrethash>`: a query reads one channel's locks only. */
  sentLocks: Map<string, Map<string, SentLockRecord>>
  /** By channel, then nonce. */
  received: Map<string, Map<bigint, ReceivedRecord>>
  /** The transaction journal, by nonce. */
  chainTransactions: Map<number, JournalEntry>
}

/**
 * Where in-memory stores live between a close and the next open (like a disk for the other adapters), and who
 * holds each one open. A store opened without a volume gets its own and is gone once dropped.
 */
export class MemoryVolume {
  readonly #stores = new Map<string, MemoryData>()
  readonly #open = new Set<string>()

  /** @internal Takes the store of `identity` for one instance, creating it if new. */
  acquire(identity: StorageIdentity): MemoryData {
    const name = storageName(identity)
    if (this.#open.has(name)) throw new StorageLockedError(`the store ${name} is already open in this memory volume`)
    let data = this.#stores.get(name)
    if (!data) {
      data = {
        meta: initialMeta(identity),
        changes: new Map(),
        events: new Map(),
        payments: new Map(),
        chainEvents: new Map(),
        outbox: new Map(),
        transactions: new Map(),
        sentProofs: new Map(),
        sentLocks: new Map(),
        received: new Map(),
        chainTransactions: new Map(),
      }
      this.#stores.set(name, data)
    }
    this.#open.add(name)
    return data
  }

  /** @internal */
  release(identity: StorageIdentity): void {
    this.#open.delete(storageName(identity))
  }

  /** Forgets the store of `identity` (it must be closed). */
  delete(identity: StorageIdentity): void {
    const name = storageName(identity)
    if (this.#open.has(name)) throw new StorageLockedError(`the store ${name} is open`)
    this.#stores.delete(name)
  }
}

export type OpenMemoryStorageOptions = { volume?: MemoryVolume }

/**
 * A store in memory: the same semantics as the durable adapters (atomic commits, copies in and out, single
 * instance per volume), but nothing survives the process. For throwaway nodes and fast tests of other layers.
 */
export async function openMemoryStorage(identity: StorageIdentity, options: OpenMemoryStorageOptions = {}): Promise<Storage> {
  checkIdentity(identity)
  const volume = options.volume ?? new MemoryVolume()
  return new MemoryStorage(identity, volume, volume.acquire(identity))
}

const byNumber = (a: number, b: number) => a - b
const chainEventKey = (e: StoredChainEvent) => `${e.blockNumber}:${e.logIndex}`
const byPosition = (a: StoredChainEvent, b: StoredChainEvent) =>
  a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1

class MemoryStorage implements Storage {
  #closed = false

  constructor(
    private readonly identity: StorageIdentity,
    private readonly volume: MemoryVolume,
    private readonly data: MemoryData,
  ) {}

  async commit(batch: Commit): Promise<void> {
    this.usable()
    checkCommit(batch, this.identity)
    const d = this.data
    for (const c of batch.changes ?? []) {
      if (d.changes.has(c.seq)) throw new StorageError(`change ${c.seq} is already stored (the log is append-only)`)
    }
    // Copy the whole batch first: a value that cannot be cloned throws here, before anything is changed.
    const b = clone(batch, 'commit')
    const meta = mergeMeta(d.meta, b.meta)
    for (const c of b.changes ?? []) d.changes.set(c.seq, c)
    if (b.pruneChangesUpTo !== undefined) for (const seq of d.changes.keys()) if (seq <= b.pruneChangesUpTo) d.changes.delete(seq)
    if (b.snapshot) d.snapshot = b.snapshot
    for (const e of b.events ?? []) d.events.set(e.seq, e)
    for (const p of b.payments ?? []) d.payments.set(p.seq, p)
    for (const e of b.chainEvents ?? []) d.chainEvents.set(chainEventKey(e), e)
    for (const r of b.outbox?.put ?? []) d.outbox.set(r.key, r)
    for (const k of b.outbox?.delete ?? []) d.outbox.delete(k)
    for (const r of b.transactions?.put ?? []) d.transactions.set(r.key, r)
    for (const k of b.transactions?.delete ?? []) d.transactions.delete(k)
    for (const p of b.sentProofs ?? []) putSentProof(d, p)
    for (const l of b.sentLocks ?? []) putSentLock(d, l)
    for (const r of b.received ?? []) putReceived(d, r)
    for (const e of b.chainTransactions?.put ?? []) d.chainTransactions.set(e.nonce, e)
    for (const nonce of b.chainTransactions?.delete ?? []) d.chainTransactions.delete(nonce)
    d.meta = meta
  }

  async load(): Promise<Loaded> {
    this.usable()
    const d = this.data
    const after = d.snapshot?.seq ?? -1
    const changes = [...d.changes.keys()]
      .filter((seq) => seq > after)
      .sort(byNumber)
      .map((seq) => d.changes.get(seq)!)
    return clone(
      {
        meta: d.meta,
        snapshot: d.snapshot,
        changes,
        outbox: [...d.outbox.values()],
        transactions: [...d.transactions.values()],
        chainTransactions: journal(d),
      },
      'load',
    )
  }

  async payments(query: PaymentQuery): Promise<PaymentRecord[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    const seqs = [...this.data.payments.keys()].sort(byNumber)
    const rows = seqs.map((seq) => this.data.payments.get(seq)!).filter((p) => paymentMatches(p, query))
    return clone(rows.slice(offset, offset + limit), 'payments')
  }

  async sentPayment(target: Address, identifier: bigint): Promise<PaymentRecord | undefined> {
    this.usable()
    // A throwaway node's history: a scan is enough.
    const rows = [...this.data.payments.values()].filter(
      (p) => isSentPayment(p) && p.identifier === identifier && p.partner.toLowerCase() === target.toLowerCase(),
    )
    const latest = rows.reduce<PaymentRecord | undefined>((a, p) => (a && a.seq > p.seq ? a : p), undefined)
    return latest && clone(latest, 'sentPayment')
  }

  async events(query: { limit?: number; offset?: number }): Promise<StoredEvent[]> {
    this.usable()
    const { offset, limit } = checkPage(query)
    const seqs = [...this.data.events.keys()].sort(byNumber).slice(offset, offset + limit)
    return clone(
      seqs.map((seq) => this.data.events.get(seq)!),
      'events',
    )
  }

  async chainEvents(query: ChainEventQuery): Promise<StoredChainEvent[]> {
    this.usable()
    if (!blockSpan(query)) return []
    return clone([...this.data.chainEvents.values()].filter((e) => chainEventMatches(e, query)).sort(byPosition), 'chainEvents')
  }

  async sentProof(channelKey: string, balanceHash: Hex): Promise<SentProofRecord | undefined> {
    this.usable()
    const q = sentProofQuery(channelKey, balanceHash)
    return clone(this.data.sentProofs.get(q.channelKey)?.get(q.hash), 'sentProof')
  }

  async sentLocks(channelKey: string, nonce: bigint): Promise<SentLockRecord[]> {
    this.usable()
    const q = sentLocksQuery(channelKey, nonce)
    if (!q) return []
    const locks = [...(this.data.sentLocks.get(q.channelKey)?.values() ?? [])]
    return clone(locks.filter((l) => lockAlive(l, q.nonce)).sort(byAdded), 'sentLocks')
  }

  async receivedMessage(channelKey: string, nonce: bigint): Promise<ReceivedRecord | undefined> {
    this.usable()
    const q = receivedQuery(channelKey, nonce)
    if (!q) return undefined
    return clone(this.data.received.get(q.channelKey)?.get(q.nonce), 'receivedMessage')
  }

  async exportDump(options: DumpOptions = {}): Promise<StorageDump> {
    this.usable()
    const d = this.data
    const all = !options.recovery
    return clone(
      {
        format: 'sluice-dump',
        meta: d.meta,
        ...(d.snapshot && all ? { snapshot: d.snapshot } : {}),
        changes: all ? [...d.changes.values()].sort((a, b) => a.seq - b.seq) : [],
        events: all ? [...d.events.values()].sort((a, b) => a.seq - b.seq) : [],
        payments: all ? [...d.payments.values()].sort((a, b) => a.seq - b.seq) : [],
        chainEvents: all ? [...d.chainEvents.values()].sort(byPosition) : [],
        outbox: [...d.outbox.values()],
        transactions: [...d.transactions.values()],
        sentProofs: all ? [...d.sentProofs.values()].flatMap((m) => [...m.values()]).sort(byProofKey) : [],
        sentLocks: all
          ? [...d.sentLocks.values()]
              .flatMap((m) => [...m.values()])
              .sort((a, b) => (a.channelKey === b.channelKey ? byAdded(a, b) : a.channelKey < b.channelKey ? -1 : 1))
          : [],
        received: all ? [...d.received.values()].flatMap((m) => [...m.values()]).sort(byReceivedKey) : [],
        chainTransactions: all ? journal(d) : [],
      },
      'exportDump',
    )
  }

  async importDump(dump: StorageDump): Promise<void> {
    this.usable()
    const d = this.data
    const lastChange = d.changes.size === 0 ? undefined : Math.max(...d.changes.keys())
    const checked = clone(checkDump(dump, this.identity, { meta: d.meta, progress: progressOf(d.snapshot?.seq, lastChange) }), 'importDump')
    d.meta = checked.meta
    d.snapshot = checked.snapshot
    d.changes = new Map(checked.changes.map((c) => [c.seq, c]))
    d.events = new Map(checked.events.map((e) => [e.seq, e]))
    d.payments = new Map(checked.payments.map((p) => [p.seq, p]))
    d.chainEvents = new Map(checked.chainEvents.map((e) => [chainEventKey(e), e]))
    d.outbox = new Map(checked.outbox.map((r) => [r.key, r]))
    d.transactions = new Map(checked.transactions.map((r) => [r.key, r]))
    d.sentProofs = new Map()
    d.sentLocks = new Map()
    d.received = new Map()
    d.chainTransactions = new Map((checked.chainTransactions ?? []).map((e) => [e.nonce, e]))
    for (const p of checked.sentProofs ?? []) putSentProof(d, p)
    for (const l of checked.sentLocks ?? []) putSentLock(d, l)
    for (const r of checked.received ?? []) putReceived(d, r)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.volume.release(this.identity)
  }

  private usable(): void {
    if (this.#closed) throw new StorageClosedError('the store is closed')
  }
}

function journal(d: MemoryData): JournalEntry[] {
  return [...d.chainTransactions.values()].sort(byNonce)
}

function putSentProof(d: MemoryData, p: SentProofRecord): void {
  let channel = d.sentProofs.get(p.channelKey)
  if (!channel) {
    channel = new Map()
    d.sentProofs.set(p.channelKey, channel)
  }
  channel.set(hashKey(p.balanceHash), p)
}

function putSentLock(d: MemoryData, l: SentLockRecord): void {
  let channel = d.sentLocks.get(l.channelKey)
  if (!channel) {
    channel = new Map()
    d.sentLocks.set(l.channelKey, channel)
  }
  channel.set(lockSuffix(l), l)
}

function putReceived(d: MemoryData, r: ReceivedRecord): void {
  let channel = d.received.get(r.channelKey)
  if (!channel) {
    channel = new Map()
    d.received.set(r.channelKey, channel)
  }
  channel.set(r.nonce, r)
}

function clone<T>(value: T, what: string): T {
  try {
    return structuredClone(value)
  } catch (e) {
    throw new StorageError(`${what}: a value cannot be stored (${(e as Error).message})`, { cause: e })
  }
}
