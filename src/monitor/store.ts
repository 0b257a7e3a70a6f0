import type pg from 'pg'
import type { Address } from 'viem'
import { join } from 'node:path'
import type { JournalEntry } from '../chain/transactionJournal.ts'
import { GroupCommit, type Batch, type BatchContext } from '../storage/groupCommit.ts'
import type { BatchOp } from '../storage/serviceStore.ts'
import { byNonce, checkJournalEntry, checkJournalNonce } from '../storage/journalRecords.ts'
import type { Lease } from '../storage/postgres/lease.ts'
import { decode, encode, openServiceStore } from '../storage/serviceLevelStore.ts'
import type { KvChange, OpenServiceStoreParameters, ServiceKv, ServiceKvRead } from '../storage/serviceStore.ts'
import { LeaseLostError } from '../storage/storage.ts'
import { channelKey, dutyOpen, type SyncRecord, type WatchedChannel } from './records.ts'

// Node only (LevelDB or PostgreSQL, docs/decisions/0077): the monitoring service runs headless.

/** Whose store it is: a store of another chain, contract or key is refused. */
export type MonitorStoreIdentity = { chainId: number; monitoringService: Address; address: Address }

/** 2: the account's transaction journal (`j!`); a store of version 1 has none, and takes the new number when opened. */
const SCHEMA = 2
const SYNC = 'sync'
const CHANNEL = 'c!'
const JOURNAL = 'j!'

// A channel's key in LevelDB sorts by token network, then id (64 hex digits).
const levelKey = (c: Pick<WatchedChannel, 'tokenNetwork' | 'channelId'>) =>
  `${CHANNEL}${c.tokenNetwork.toLowerCase()}!${c.channelId.toString(16).padStart(64, '0')}`
// A journal entry's key: its nonce, 16 digits (a safe integer's most), so key order is nonce order.
const journalKey = (nonce: number) => `${JOURNAL}${nonce.toString().padStart(16, '0')}`

/** A channel's key in memory from its key in the store. */
const channelKeyOf = (storeKey: string) => {
  const [tokenNetwork, id] = storeKey.slice(CHANNEL.length).split('!') as [Address, string]
  return channelKey(tokenNetwork, BigInt(`0x${id}`))
}

/** What the store loads at open. */
type Loaded = { records: Map<string, WatchedChannel>; journal: Map<number, JournalEntry>; sync: SyncRecord | undefined }

/** One step's view: the state with the writes of the steps before it in the batch, and its own. */
export type MonitorTx = {
  /**
   * What only the instance holding the service's lease may write (a duty's step, a transaction's journal entry, the
   * chain watch's range): LeaseLostError, and the step is refused alone, unless the batch's transaction holds it.
   */
  requireLease(): void
  /** A copy of the channel's record, free to change and put back. */
  channel(key: string): WatchedChannel | undefined
  putChannel(channel: WatchedChannel): void
  deleteChannel(key: string): void
  sync(): SyncRecord | undefined
  putSync(sync: SyncRecord): void
  /** How many channels `requester` (lower case) holds a request in. */
  requesterChannels(requester: string): number
  /** Keys of the channels with work or a reward pending. */
  openChannels(): string[]
  /** Puts (or replaces) the transaction journal's entry of its nonce (src/chain/transactionJournal.ts); checked and copied now. */
  putJournalEntry(entry: JournalEntry): void
  deleteJournalEntry(nonce: number): void
}

/**
 * The service's LevelDB store (docs/decisions/0031): every watched channel, the sync mark and the account's
 * transaction journal (docs/decisions/0051), all loaded at open and kept in memory. Every change goes through
 * `transact`, whose steps are batched (group commit, src/storage/groupCommit.ts) and written with `sync: true`; only
 * once a batch is durable are its steps answered and the memory updated.
 */
export class MonitorStore {
  private readonly requesterIndex = new Map<string, Set<string>>()
  private readonly open = new Set<string>()
  private readonly commits: GroupCommit<MonitorTx>

  private readonly records: Map<string, WatchedChannel>
  private syncRecord: SyncRecord | undefined
  private readonly journalEntries: Map<number, JournalEntry>

  private constructor(
    private readonly kv: ServiceKv,
    loaded: Loaded,
    readonly location: string,
  ) {
    this.records = loaded.records
    this.syncRecord = loaded.sync
    this.journalEntries = loaded.journal
    for (const [key, channel] of this.records) this.index(key, undefined, channel)
    this.commits = new GroupCommit({
      name: 'the monitoring service store',
      newBatch: (context) => this.newBatch(context),
      write: () => Promise.reject(new Error('written in its session')),
      session: (body) => kv.commit(body),
    })
    kv.onChanges((changes) => this.applyChanges(changes))
  }

  private static readonly meta = (
    identity: MonitorStoreIdentity,
  ): OpenServiceStoreParameters<{ schema: number; chainId: number; monitoringService: string; address: string }, Loaded> => ({
    // From 1 (no journal yet) nothing is converted; the new number keeps an older Sluice, blind to the journal, out.
    meta: {
      schema: SCHEMA,
      chainId: identity.chainId,
      monitoringService: identity.monitoringService.toLowerCase(),
      address: identity.address.toLowerCase(),
    },
    owner: { chainId: 'chain', monitoringService: 'contract', address: 'service' },
    load: async (kv: ServiceKvRead) => {
      const records = new Map<string, WatchedChannel>()
      for await (const [, value] of kv.entries(CHANNEL)) {
        const channel = decode<WatchedChannel>(value)
        records.set(channelKey(channel.tokenNetwork, channel.channelId), channel)
      }
      const journal = new Map<number, JournalEntry>()
      for await (const [, value] of kv.entries(JOURNAL)) {
        const entry = decode<JournalEntry>(value)
        journal.set(entry.nonce, entry)
      }
      const syncBytes = await kv.get(SYNC)
      return { records, journal, sync: syncBytes === undefined ? undefined : decode<SyncRecord>(syncBytes) }
    },
  })

  /** Opens (or creates) the store of `identity` in `<dataDir>/monitor-<chainId>-<contract>-<address>`. StorageLockedError when another process has it. */
  static async open(dataDir: string, identity: MonitorStoreIdentity): Promise<MonitorStore> {
    const location = join(dataDir, `monitor-${identity.chainId}-${identity.monitoringService.toLowerCase()}-${identity.address.toLowerCase()}`)
    const { kv, loaded } = await openServiceStore(location, MonitorStore.meta(identity))
    return new MonitorStore(kv, loaded, location)
  }

  /**
   * Opens (or creates) the store of `identity` in the database of `pool` (the table `monitor_kv`), shared with the
   * service's other instances: what they write reaches this one's memory within a moment (docs/decisions/0077). With
   * `lease`, the steps that require it pass while this instance holds it.
   */
  static async openPostgres(
    pool: pg.Pool,
    identity: MonitorStoreIdentity,
    options: { lease?: Lease | undefined; pollMs?: number; onError?(error: Error): void } = {},
  ): Promise<MonitorStore> {
    const { openPostgresServiceStore } = await import('../storage/postgres/serviceStore.ts')
    const { kv, loaded } = await openPostgresServiceStore(pool, { component: 'monitor', ...options }, MonitorStore.meta(identity))
    return new MonitorStore(kv, loaded, 'the table monitor_kv')
  }

  /** Which engine holds the store. */
  get engine(): ServiceKv['engine'] {
    return this.kv.engine
  }

  /** Catches up now with what the service's other instances wrote (PostgreSQL; nothing to do on LevelDB). */
  async catchUp(): Promise<void> {
    await (this.kv as { catchUp?(): Promise<void> }).catchUp?.()
  }

  /** Every watched channel, as last made durable. Never change what it holds: `transact` is the way to change it. */
  get channels(): ReadonlyMap<string, WatchedChannel> {
    return this.records
  }

  get sync(): SyncRecord | undefined {
    return this.syncRecord
  }

  /** How many channels `requester` (any case) holds a request in. */
  requesterChannels(requester: string): number {
    return this.requesterIndex.get(requester.toLowerCase())?.size ?? 0
  }

  /** Keys of the channels with work or a reward pending. */
  openChannels(): string[] {
    return [...this.open]
  }

  /** The transaction journal as last made durable, in nonce order (copies). `transact` is the way to change it. */
  journal(): JournalEntry[] {
    return [...this.journalEntries.values()].sort(byNonce).map((entry) => structuredClone(entry))
  }

  /** Set once a write failed: the store refuses everything after it (the service stops). */
  get failed(): Error | undefined {
    return this.commits.failed
  }

  /**
   * Runs `step` in the next batch and resolves with what it returned once the batch is durable. A step that throws
   * rejects alone, its writes dropped; a failed write rejects the whole batch and every later step.
   */
  transact<T>(step: (tx: MonitorTx) => T): Promise<T> {
    return this.commits.transact(step)
  }

  /** Waits for the writes under way, then closes the database. */
  async close(): Promise<void> {
    await this.commits.close()
    await this.kv.close()
  }

  /** What the service's other instances wrote (PostgreSQL): the memory and its indexes follow. */
  private applyChanges(changes: KvChange[]): void {
    for (const { key, value } of changes) {
      if (key === SYNC) {
        if (value) this.syncRecord = decode<SyncRecord>(value)
      } else if (key.startsWith(CHANNEL)) {
        const memoryKey = channelKeyOf(key)
        const before = this.records.get(memoryKey)
        const after = value ? decode<WatchedChannel>(value) : undefined
        if (after) this.records.set(memoryKey, after)
        else this.records.delete(memoryKey)
        this.index(memoryKey, before, after)
      } else if (key.startsWith(JOURNAL)) {
        const nonce = Number(key.slice(JOURNAL.length))
        if (value) this.journalEntries.set(nonce, decode<JournalEntry>(value))
        else this.journalEntries.delete(nonce)
      }
    }
  }

  private newBatch(context: BatchContext): Batch<MonitorTx> {
    /** The batch's writes so far: a record, or null for a deletion. */
    const written = new Map<string, WatchedChannel | null>()
    /** The batch's journal writes: an entry, or null for a deletion. */
    const journal = new Map<number, JournalEntry | null>()
    let sync: SyncRecord | undefined
    return {
      step: () => {
        const own = new Map<string, WatchedChannel | null>()
        const ownJournal = new Map<number, JournalEntry | null>()
        let ownSync: SyncRecord | undefined
        const current = (key: string) => (own.has(key) ? own.get(key) : written.has(key) ? written.get(key) : this.records.get(key))
        const tx: MonitorTx = {
          requireLease: () => {
            if (!context.leaseHeld) throw new LeaseLostError("this instance does not hold the monitoring service's lease")
          },
          channel: (key) => {
            const record = current(key)
            return record ? structuredClone(record) : undefined
          },
          putChannel: (channel) => void own.set(channelKey(channel.tokenNetwork, channel.channelId), structuredClone(channel)),
          deleteChannel: (key) => void own.set(key, null),
          sync: () => ownSync ?? sync ?? this.syncRecord,
          putSync: (next) => {
            ownSync = structuredClone(next)
          },
          requesterChannels: (requester) => {
            const base = this.requesterIndex.get(requester)
            let count = base?.size ?? 0
            for (const key of new Set([...written.keys(), ...own.keys()])) {
              const before = base?.has(key) ?? false
              const after = current(key)?.requests[requester] !== undefined
              count += Number(after) - Number(before)
            }
            return count
          },
          openChannels: () => {
            const keys = new Set(this.open)
            for (const key of new Set([...written.keys(), ...own.keys()])) {
              const record = current(key)
              if (record && Object.values(record.duties).some(dutyOpen)) keys.add(key)
              else keys.delete(key)
            }
            return [...keys]
          },
          putJournalEntry: (entry) => {
            const copy = structuredClone(entry)
            checkJournalEntry(copy)
            ownJournal.set(copy.nonce, copy)
          },
          deleteJournalEntry: (nonce) => void ownJournal.set(checkJournalNonce(nonce), null),
        }
        const keep = () => {
          for (const [key, record] of own) written.set(key, record)
          for (const [nonce, entry] of ownJournal) journal.set(nonce, entry)
          if (ownSync) sync = ownSync
        }
        return { tx, keep }
      },
      ops: () => {
        const ops: BatchOp[] = []
        for (const [key, record] of written) {
          const stored = record ?? this.records.get(key)
          if (!stored) continue
          ops.push(record ? { type: 'put', key: levelKey(record), value: encode(record) } : { type: 'del', key: levelKey(stored) })
        }
        for (const [nonce, entry] of journal)
          ops.push(entry ? { type: 'put', key: journalKey(nonce), value: encode(entry) } : { type: 'del', key: journalKey(nonce) })
        if (sync) ops.push({ type: 'put', key: SYNC, value: encode(sync) })
        return ops
      },
      apply: () => {
        for (const [key, record] of written) {
          const before = this.records.get(key)
          if (record) this.records.set(key, record)
          else this.records.delete(key)
          this.index(key, before, record ?? undefined)
        }
        for (const [nonce, entry] of journal) {
          if (entry) this.journalEntries.set(nonce, entry)
          else this.journalEntries.delete(nonce)
        }
        if (sync) this.syncRecord = sync
      },
    }
  }

  private index(key: string, before: WatchedChannel | undefined, after: WatchedChannel | undefined) {
    for (const requester of Object.keys(before?.requests ?? {})) {
      const set = this.requesterIndex.get(requester)
      set?.delete(key)
      if (set?.size === 0) this.requesterIndex.delete(requester)
    }
    for (const requester of Object.keys(after?.requests ?? {})) {
      const set = this.requesterIndex.get(requester) ?? new Set<string>()
      this.requesterIndex.set(requester, set)
      set.add(key)
    }
    if (after && Object.values(after.duties).some(dutyOpen)) this.open.add(key)
    else this.open.delete(key)
  }
}
