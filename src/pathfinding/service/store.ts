import type pg from 'pg'
import { join } from 'node:path'
import type { Address } from 'viem'
import type { JournalEntry } from '../../chain/transactionJournal.ts'
import { GroupCommit, type Batch, type BatchContext } from '../../storage/groupCommit.ts'
import type { BatchOp } from '../../storage/serviceStore.ts'
import { byNonce, checkJournalEntry, checkJournalNonce } from '../../storage/journalRecords.ts'
import type { Lease } from '../../storage/postgres/lease.ts'
import { decode, encode, openServiceStore } from '../../storage/serviceLevelStore.ts'
import type { KvChange, OpenServiceStoreParameters, ServiceKv, ServiceKvRead } from '../../storage/serviceStore.ts'
import { LeaseLostError, StorageClosedError } from '../../storage/storage.ts'
import type { PresenceRecord } from '../../transport/libp2p/presence.ts'
import type { PfsChannel } from '../channel.ts'
import { sessionKey, type StoredIou } from '../iou.ts'
import type { FeedbackRecord, SyncRecord } from './records.ts'

// Node only (LevelDB or PostgreSQL, docs/decisions/0077): the pathfinding service runs headless.

/** Whose store it is: a store of another chain, registry or key is refused. */
export type PfsStoreIdentity = { chainId: number; registry: Address; address: Address }

const SCHEMA = 1
const SYNC = 'sync'
/** Loaded at open and kept in memory: channels, IOU sessions, the transaction journal. */
const CHANNEL = 'c!'
const IOU = 'i!'
const JOURNAL = 'j!'
/** Who is online as the leader's transport last saw it (PostgreSQL: for the standbys, which are not on the relays). */
const PRESENCE = 'p!'
/** Read from disk when asked: one record per routes answer, the oldest pruned (its key starts with its time). */
const FEEDBACK = 'f!'
const LOADED = [CHANNEL, IOU, JOURNAL, PRESENCE] as const

export const channelStoreKey = (tokenNetwork: Address, channelId: bigint) =>
  `${CHANNEL}${tokenNetwork.toLowerCase()}!${channelId.toString(16).padStart(64, '0')}`
const iouKey = (stored: StoredIou) => `${IOU}${sessionKey(stored.iou.sender, stored.iou.expirationBlock)}`
// A nonce as 16 digits (a safe integer's most): key order is nonce order.
const journalKey = (nonce: number) => `${JOURNAL}${nonce.toString().padStart(16, '0')}`
const feedbackKey = (token: string) => `${FEEDBACK}${token}`
const presenceKey = (node: Address) => `${PRESENCE}${node.toLowerCase()}`

/** What the store loads at open. */
type Loaded = { records: Map<string, unknown>; sync: SyncRecord | undefined }

/** One step's view: the records with the writes of the steps before it in the batch, and its own. */
export type PfsTx = {
  /** What only the instance holding the service's lease may write (a claim's journal entry, the chain watch's range). */
  requireLease(): void
  /** A copy of the channel's record. */
  channel(tokenNetwork: Address, channelId: bigint): PfsChannel | undefined
  putChannel(channel: PfsChannel): void
  deleteChannel(tokenNetwork: Address, channelId: bigint): void
  /** A copy of the session's record. */
  iou(sender: Address, expirationBlock: bigint): StoredIou | undefined
  /** The sender's session not claimed yet (at most one), a copy. */
  activeIou(sender: Address): StoredIou | undefined
  putIou(stored: StoredIou): void
  putFeedback(record: FeedbackRecord): void
  /** A node's presence record as the leader sees it, or undefined once it is offline. */
  putPresence(node: Address, record: PresenceRecord | undefined): void
  sync(): SyncRecord | undefined
  putSync(sync: SyncRecord): void
  /** Puts (or replaces) the transaction journal's entry of its nonce (src/chain/transactionJournal.ts); checked and copied now. */
  putJournalEntry(entry: JournalEntry): void
  deleteJournalEntry(nonce: number): void
}

/** What a batch changed once it is durable: each key and its new value (null: deleted). */
export type Committed = ReadonlyMap<string, unknown>

/**
 * The pathfinding service's LevelDB store (docs/decisions/0072), as the monitoring service's (src/monitor/store.ts):
 * channels, IOU sessions, the sync mark and the account's transaction journal loaded at open and kept in memory; the
 * routes answered (for their feedback) on disk only. Every change goes through `transact`, whose steps are batched
 * (group commit, src/storage/groupCommit.ts) and written with `sync: true`; only once a batch is durable are its steps answered and the memory,
 * and what `onCommitted` is told, updated: nothing is acknowledged or answered before it survives kill -9.
 */
export class PfsStore {
  private readonly commits: GroupCommit<PfsTx>
  private readonly listeners: ((committed: Committed) => void)[] = []
  /** By sender (lower case): the key of its session not claimed yet. */
  private readonly activeIous = new Map<string, string>()

  /** The loaded records, one map per prefix, by key. */
  private readonly maps: Record<(typeof LOADED)[number], Map<string, unknown>> = {
    [CHANNEL]: new Map(),
    [IOU]: new Map(),
    [JOURNAL]: new Map(),
    [PRESENCE]: new Map(),
  }

  private syncRecord: SyncRecord | undefined

  private constructor(
    private readonly kv: ServiceKv & { clearRange?(gte: string, lt: string): Promise<void> },
    { records, sync }: Loaded,
    readonly location: string,
  ) {
    this.syncRecord = sync
    for (const [key, value] of records) {
      this.mapOf(key)!.set(key, value)
      if (key.startsWith(IOU)) this.indexIou(key, value as StoredIou)
    }
    this.commits = new GroupCommit({
      name: 'the pathfinding service store',
      newBatch: (context) => this.newBatch(context),
      write: () => Promise.reject(new Error('written in its session')),
      session: (body) => kv.commit(body),
    })
    kv.onChanges((changes) => this.applyChanges(changes))
  }

  private static readonly meta = (
    identity: PfsStoreIdentity,
  ): OpenServiceStoreParameters<{ schema: number; chainId: number; registry: string; address: string }, Loaded> => ({
    meta: { schema: SCHEMA, chainId: identity.chainId, registry: identity.registry.toLowerCase(), address: identity.address.toLowerCase() },
    owner: { chainId: 'chain', registry: 'registry', address: 'service' },
    load: async (kv: ServiceKvRead) => {
      const records = new Map<string, unknown>()
      for (const prefix of LOADED) for await (const [key, value] of kv.entries(prefix)) records.set(key, decode(value))
      const syncBytes = await kv.get(SYNC)
      return { records, sync: syncBytes === undefined ? undefined : decode<SyncRecord>(syncBytes) }
    },
  })

  private mapOf(key: string): Map<string, unknown> | undefined {
    return this.maps[key.slice(0, 2) as (typeof LOADED)[number]]
  }

  private get(key: string): unknown {
    return this.mapOf(key)?.get(key)
  }

  /** Opens (or creates) the store of `identity` in `<dataDir>/pathfinding-<chainId>-<registry>-<address>`. StorageLockedError when another process has it. */
  static async open(dataDir: string, identity: PfsStoreIdentity): Promise<PfsStore> {
    const location = join(dataDir, `pathfinding-${identity.chainId}-${identity.registry.toLowerCase()}-${identity.address.toLowerCase()}`)
    const { db, kv, loaded } = await openServiceStore(location, PfsStore.meta(identity))
    return new PfsStore({ ...kv, clearRange: (gte, lt) => db.clear({ gte, lt }) }, loaded, location)
  }

  /**
   * Opens (or creates) the store of `identity` in the database of `pool` (the table `pfs_kv`), shared with the
   * service's other instances (docs/decisions/0077). With `lease`, the steps that require it pass while this instance
   * holds it.
   */
  static async openPostgres(
    pool: pg.Pool,
    identity: PfsStoreIdentity,
    options: { lease?: Lease | undefined; pollMs?: number; onError?(error: Error): void } = {},
  ): Promise<PfsStore> {
    const { openPostgresServiceStore } = await import('../../storage/postgres/serviceStore.ts')
    // The routes answered are read from the table when asked, never kept in memory.
    const { kv, loaded } = await openPostgresServiceStore(pool, { component: 'pfs', untracked: FEEDBACK, ...options }, PfsStore.meta(identity))
    return new PfsStore(kv, loaded, 'the table pfs_kv')
  }

  /** Catches up now with what the service's other instances wrote (PostgreSQL; nothing to do on LevelDB). */
  async catchUp(): Promise<void> {
    await (this.kv as { catchUp?(): Promise<void> }).catchUp?.()
  }

  /** Every channel record, as last made durable. */
  channels(): PfsChannel[] {
    return this.loaded<PfsChannel>(CHANNEL)
  }

  /** Every IOU session, as last made durable. Never change what it holds: `transact` is the way to change it. */
  ious(): StoredIou[] {
    return this.loaded<StoredIou>(IOU)
  }

  iou(sender: Address, expirationBlock: bigint): StoredIou | undefined {
    return this.get(`${IOU}${sessionKey(sender, expirationBlock)}`) as StoredIou | undefined
  }

  /** The sender's session not claimed yet, if any. */
  activeIou(sender: Address): StoredIou | undefined {
    const key = this.activeIous.get(sender.toLowerCase())
    return key === undefined ? undefined : (this.get(key) as StoredIou)
  }

  /** A node's presence record as the service's leader last wrote it (undefined: offline, or never seen). */
  presence(node: Address): PresenceRecord | undefined {
    return this.maps[PRESENCE].get(presenceKey(node)) as PresenceRecord | undefined
  }

  /** The routes answered under `token`, read from disk. */
  async feedback(token: string): Promise<FeedbackRecord | undefined> {
    if (this.commits.closed) throw new StorageClosedError('the pathfinding service store is closed')
    const bytes = await this.kv.get(feedbackKey(token))
    return bytes === undefined ? undefined : decode<FeedbackRecord>(bytes)
  }

  /** Forgets the routes answered before `before` (a token's first 12 hex digits are its time, so keys sort by it). */
  async pruneFeedback(before: number): Promise<void> {
    if (this.commits.closed || this.commits.failed) return
    await this.kv.clearRange?.(FEEDBACK, `${FEEDBACK}${before.toString(16).padStart(12, '0')}`)
  }

  get sync(): SyncRecord | undefined {
    return this.syncRecord
  }

  /** The transaction journal as last made durable, in nonce order (copies). */
  journal(): JournalEntry[] {
    return this.loaded<JournalEntry>(JOURNAL)
      .sort(byNonce)
      .map((entry) => structuredClone(entry))
  }

  /** Set once a write failed: the store refuses everything after it (the service stops). */
  get failed(): Error | undefined {
    return this.commits.failed
  }

  /** Told of every batch once it is durable, with what it changed. */
  onCommitted(listener: (committed: Committed) => void): void {
    this.listeners.push(listener)
  }

  /**
   * Runs `step` in the next batch and resolves with what it returned once the batch is durable. A step that throws
   * rejects alone, its writes dropped; a failed write rejects the whole batch and every later step.
   */
  transact<T>(step: (tx: PfsTx) => T): Promise<T> {
    return this.commits.transact(step)
  }

  /** Waits for the writes under way, then closes the database. */
  async close(): Promise<void> {
    await this.commits.close()
    await this.kv.close()
  }

  /** What the service's other instances wrote (PostgreSQL): the memory, its index and the listeners follow. */
  private applyChanges(changes: KvChange[]): void {
    const committed = new Map<string, unknown>()
    for (const { key, value } of changes) {
      const record = value ? decode(value) : null
      if (key === SYNC) {
        if (record) this.syncRecord = record as SyncRecord
        continue
      }
      const map = this.mapOf(key)
      if (map) {
        if (record === null) map.delete(key)
        else map.set(key, record)
        if (key.startsWith(IOU) && record !== null) this.indexIou(key, record as StoredIou)
      }
      if (key !== 'meta') committed.set(key, record)
    }
    for (const listener of this.listeners) listener(committed)
  }

  private loaded<T>(prefix: (typeof LOADED)[number]): T[] {
    return [...this.maps[prefix].values()] as T[]
  }

  private newBatch(context: BatchContext): Batch<PfsTx> {
    /** The batch's writes so far: a value, or null for a deletion. */
    const written = new Map<string, unknown>()
    let sync: SyncRecord | undefined
    return {
      step: () => {
        const own = new Map<string, unknown>()
        let ownSync: SyncRecord | undefined
        const current = (key: string) => (own.has(key) ? own.get(key) : written.has(key) ? written.get(key) : this.get(key))
        const copy = <T>(key: string) => {
          const value = current(key)
          return value === null || value === undefined ? undefined : (structuredClone(value) as T)
        }
        const activeKey = (sender: Address) => {
          const prefix = `${IOU}${sender.toLowerCase()}!`
          // This batch's writes first (a session claimed or opened in it), then what is durable.
          for (const map of [own, written])
            for (const [key, value] of map) if (key.startsWith(prefix) && value && (value as StoredIou).status === 'held') return key
          const durable = this.activeIous.get(sender.toLowerCase())
          if (durable === undefined) return undefined
          const now = current(durable) as StoredIou | null | undefined
          return now?.status === 'held' ? durable : undefined
        }
        const tx: PfsTx = {
          requireLease: () => {
            if (!context.leaseHeld) throw new LeaseLostError("this instance does not hold the pathfinding service's lease")
          },
          channel: (tokenNetwork, channelId) => copy<PfsChannel>(channelStoreKey(tokenNetwork, channelId)),
          putChannel: (channel) => void own.set(channelStoreKey(channel.tokenNetwork, channel.channelId), structuredClone(channel)),
          deleteChannel: (tokenNetwork, channelId) => void own.set(channelStoreKey(tokenNetwork, channelId), null),
          iou: (sender, expirationBlock) => copy<StoredIou>(`${IOU}${sessionKey(sender, expirationBlock)}`),
          activeIou: (sender) => {
            const key = activeKey(sender)
            return key === undefined ? undefined : copy<StoredIou>(key)
          },
          putIou: (stored) => void own.set(iouKey(stored), structuredClone(stored)),
          putFeedback: (record) => void own.set(feedbackKey(record.token), structuredClone(record)),
          putPresence: (node, record) => void own.set(presenceKey(node), record ? structuredClone(record) : null),
          sync: () => ownSync ?? sync ?? this.syncRecord,
          putSync: (next) => {
            ownSync = structuredClone(next)
          },
          putJournalEntry: (entry) => {
            const entryCopy = structuredClone(entry)
            checkJournalEntry(entryCopy)
            own.set(journalKey(entryCopy.nonce), entryCopy)
          },
          deleteJournalEntry: (nonce) => void own.set(journalKey(checkJournalNonce(nonce)), null),
        }
        const keep = () => {
          for (const [key, record] of own) written.set(key, record)
          if (ownSync) sync = ownSync
        }
        return { tx, keep }
      },
      ops: () => {
        const ops: BatchOp[] = []
        for (const [key, record] of written) ops.push(record === null ? { type: 'del', key } : { type: 'put', key, value: encode(record) })
        if (sync) ops.push({ type: 'put', key: SYNC, value: encode(sync) })
        return ops
      },
      apply: () => {
        for (const [key, record] of written) {
          const map = this.mapOf(key)
          if (!map) continue
          if (record === null) map.delete(key)
          else map.set(key, record)
          if (key.startsWith(IOU) && record !== null) this.indexIou(key, record as StoredIou)
        }
        if (sync) this.syncRecord = sync
        for (const listener of this.listeners) listener(written)
      },
    }
  }

  private indexIou(key: string, stored: StoredIou): void {
    const sender = stored.iou.sender.toLowerCase()
    if (stored.status === 'held') this.activeIous.set(sender, key)
    else if (this.activeIous.get(sender) === key) this.activeIous.delete(sender)
  }
}
