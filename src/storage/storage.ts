import { SluiceError } from '../errors.ts'
import type { Address, Hex } from 'viem'
import type { JournalEntry } from '../chain/transactionJournal.ts'
import type { Message } from '../protocol/messages/types.ts'
import type { StateChange } from '../protocol/state/changes.ts'
import type { NodeEvent, Transaction } from '../protocol/state/effects.ts'
import type { NodeState } from '../protocol/state/types.ts'

/**
 * The storage port: what the node runtime needs from a durable store, whatever the engine (IndexedDB in the
 * browser, LevelDB headless, memory for throwaway nodes). Values hold bigints; each adapter encodes them.
 *
 * Write-ahead: the runtime computes a batch of transitions in memory, then `commit`s the state changes together
 * with everything their effects must leave behind (outbox messages, transaction intents, events) in one atomic,
 * durable write, and only then lets any effect out of the node. `load` gives back all of it after a restart.
 */
export interface Storage {
  /** Applies everything in `batch` atomically; resolves once it is durable (survives a crash or kill -9). */
  commit(batch: Commit): Promise<void>
  /**
   * Everything needed to resume: meta, the latest snapshot, the changes after it in order, open outbox and
   * transactions, and the account's transaction journal in nonce order.
   */
  load(): Promise<Loaded>
  /** Payment history, oldest first, filtered by token and partner, paged without loading the rest. */
  payments(query: PaymentQuery): Promise<PaymentRecord[]>
  /**
   * The latest payment we sent to `target` under `identifier` (a sent success or failure, never a received row),
   * from an index: what an identifier stood for (docs/decisions/0018), at the cost of one key however long the
   * history.
   */
  sentPayment(target: Address, identifier: bigint): Promise<PaymentRecord | undefined>
  /** Node events (debug), oldest first, paged. */
  events(query: { limit?: number; offset?: number }): Promise<StoredEvent[]>
  /** Raw chain events kept for the debug API, filtered and ordered by (block, log index). */
  chainEvents(query: ChainEventQuery): Promise<StoredChainEvent[]>
  /** A balance proof we signed in a channel, by its balance hash (to settle after a close with an old one). */
  sentProof(channelKey: string, balanceHash: Hex): Promise<SentProofRecord | undefined>
  /** Our locks that were pending in the proof with this nonce, in the order they were added (for unlock). */
  sentLocks(channelKey: string, nonce: bigint): Promise<SentLockRecord[]>
  /** The partner's message we applied under this nonce of its end of the channel, if one is kept (equivocation check). */
  receivedMessage(channelKey: string, nonce: bigint): Promise<ReceivedRecord | undefined>
  /**
   * The whole store as plain data (for backup); `importDump` refuses a dump of another node or an older one. With
   * `{recovery: true}`, only the meta, the outbox and the transactions (every other list empty, no snapshot, no
   * transaction journal: docs/decisions/0051): what a backup copy takes from the store beside the state
   * (docs/decisions/0034), a read that does not grow with the payment history.
   */
  exportDump(options?: DumpOptions): Promise<StorageDump>
  importDump(dump: StorageDump): Promise<void>
  close(): Promise<void>
  /**
   * Only in stores that another instance can take over (PostgreSQL's, under a lease: docs/decisions/0076): calls
   * `listener` once, as soon as this instance no longer holds the store (its lease ran out or was taken). Every commit
   * fails from then on with LeaseLostError, and the node must stop signing and sending at once, without waiting for
   * its next commit. Answers the unsubscribe.
   */
  onLeaseLost?(listener: (error: LeaseLostError) => void): () => void
}

export type DumpOptions = { recovery?: boolean }

/** Which database: one per chain, token network registry and node address. */
export type StorageIdentity = { chainId: bigint; registry: Address; address: Address }

export const STORAGE_SCHEMA_VERSION = 5

export type Meta = StorageIdentity & {
  schemaVersion: number
  /** The last block whose events are part of the stored state. */
  syncedBlock: bigint
  /**
   * Hashes of synced blocks (the block watcher's, oldest first, ending at `syncedBlock`), written with each synced
   * mark: a restart checks them, so a reorg of synced blocks while the node was down is noticed. Absent in stores
   * written before they were kept.
   */
  recentBlocks?: { number: bigint; hash: Hex; timestamp?: bigint }[]
  createdAt: number
}

export type StoredChange = { seq: number; time: number; change: StateChange }

export type Snapshot = { seq: number; state: NodeState }

/** A message waiting for its acknowledgement; `key` is unique per message (recipient + type + message id). */
export type OutboxRecord = {
  key: string
  recipient: Address
  /** Unsigned: the runtime signs it (deterministically) each time it sends it. */
  message: Message
  /** The channel's ordered queue it belongs to, if any. */
  channelKey?: string
  queuedAt: number
  attempts: number
  nextAttemptAt: number
}

export type TransactionRecord = {
  key: string
  transaction: Transaction
  createdAt: number
  status: 'pending' | 'sent'
  /** The newest version broadcast. */
  hash?: Hex
  /** Every version broadcast (a replacement at a higher fee has a hash of its own): one of them may be the one mined. */
  hashes?: Hex[]
  nonce?: number
}

/** `seq` is the event's own key (unique among events, not the seq of the change that caused it). */
export type StoredEvent = { seq: number; time: number; event: NodeEvent }

/**
 * One row of the payment history: sent success, sent failed, received success, or (beyond Raiden) a payment we
 * mediated (docs/rest-api.md, Payment history entry).
 */
export type PaymentRecord = {
  /** The row's key, unique among payments; the history is ordered by it. */
  seq: number
  /** Milliseconds since the epoch at which the event was written (log_time). */
  time: number
  event: 'EventPaymentSentSuccess' | 'EventPaymentSentFailed' | 'EventPaymentReceivedSuccess' | 'EventPaymentMediated'
  token: Address
  /** Target for sent payments, initiator for received and mediated ones. */
  partner: Address
  amount: bigint
  identifier: bigint
  secrethash: Hex
  /** Sent successes: the secret, so a payment retried with its identifier gets its first result (docs/decisions/0018). */
  secret?: Hex
  /** Sent successes: the hops the payment took, ending at the target (absent in rows written before it was kept). */
  route?: Address[]
  reason?: string
  /**
   * Sent successes: what the payment cost beyond its amount (the route's estimated fee and its margin); mediations:
   * what we kept of it (amount in less amount out). Absent in rows written before it was kept.
   */
  fee?: bigint
  /** Mediations: the payment's target. */
  target?: Address
}

/** A row of a payment we sent (succeeded or failed): what an identifier toward a target stood for (sentPayment). */
export const isSentPayment = (p: PaymentRecord): boolean => p.event === 'EventPaymentSentSuccess' || p.event === 'EventPaymentSentFailed'

export type PaymentQuery = { token?: Address; partner?: Address; limit?: number; offset?: number }

export type StoredChainEvent = {
  blockNumber: bigint
  logIndex: number
  transactionHash: Hex
  /** Absent in events stored before these were kept (the debug API then reads them from the receipt). */
  transactionIndex?: number
  blockHash?: Hex
  /** Contract that emitted it (registry, token network, secret registry, user deposit). */
  address: Address
  name: string
  args: Record<string, unknown>
  /** For filtering: the token network and channel it concerns, and the participants, when it has them. */
  tokenNetwork?: Address
  channelId?: bigint
  participants?: Address[]
}

/**
 * A balance proof we signed, kept so that we can settle whichever of our proofs the partner closes with: the
 * contract wants its preimage. Kept out of the state, which would otherwise grow with every message.
 */
export type SentProofRecord = {
  channelKey: string
  balanceHash: Hex
  nonce: bigint
  transferredAmount: bigint
  lockedAmount: bigint
  locksroot: Hex
}

/**
 * One of our locks in a channel: pending in every proof from `addedNonce` until `removedNonce` (excluded). Written
 * when the lock is added and again, with `removedNonce`, when it is unlocked or expired; key: channel, secret
 * hash and addedNonce.
 */
export type SentLockRecord = {
  channelKey: string
  secrethash: Hex
  expiration: bigint
  amount: bigint
  addedNonce: bigint
  removedNonce?: bigint
}

/**
 * A message the partner signed under one nonce of its end of a channel, as we applied it: a balance proof
 * (LockedTransfer, RefundTransfer, Unlock, LockExpired) or a withdraw message (WithdrawRequest, WithdrawConfirmation,
 * WithdrawExpired), which share the nonce sequence. Kept so that a second message under the same nonce can be told
 * apart from a resend, and be evidence with both signatures if it differs (docs/decisions/0029). Key: channel and
 * nonce; written once, when the message is applied.
 */
export type ReceivedRecord = {
  channelKey: string
  nonce: bigint
  /** The message type. */
  type: string
  /** The bytes the partner's signature covers (docs/protocol.md §2: packMessage), as 0x hex. */
  signed: Hex
  signature: Hex
}

export type ChainEventQuery = { address?: Address; tokenNetwork?: Address; channelId?: bigint; fromBlock?: bigint; toBlock?: bigint }

/**
 * Applied in this order: changes, then `pruneChangesUpTo` (so it also drops changes of this same batch), then
 * everything else; within outbox, transactions and chainTransactions, puts before deletes (a key both put and
 * deleted is gone).
 * Meta is merged into the stored meta; it may not change the identity or the schema version.
 * The change log is append-only: a change whose seq is already stored fails the whole commit. Events, payments
 * and chain events written again under their key (seq, or block and log index) replace the row. Block numbers
 * must be safe integers (IndexedDB keys cannot be bigints). What the call sees is what is stored: changing the
 * batch's objects afterwards, even before the promise resolves, does not reach the store.
 */
export type Commit = {
  /**
   * Written durably before the promise resolves unless `relaxed`: then it may reach the disk later (IndexedDB
   * `durability: 'relaxed'`, LevelDB without `sync`), still in order and whole, and a crash of the process or the tab
   * keeps it; only a crash of the machine may lose it, and then with every commit after it up to the next one that is
   * not relaxed (which makes those durable too). For what the write-ahead rule does not need (docs/decisions/0001).
   */
  relaxed?: boolean
  changes?: StoredChange[]
  snapshot?: Snapshot
  /** Drop stored changes with seq <= this (they are inside a durable snapshot). */
  pruneChangesUpTo?: number
  events?: StoredEvent[]
  payments?: PaymentRecord[]
  chainEvents?: StoredChainEvent[]
  outbox?: { put?: OutboxRecord[]; delete?: string[] }
  transactions?: { put?: TransactionRecord[]; delete?: string[] }
  /**
   * The account's transaction journal (src/chain/transactionJournal.ts), one entry per nonce: put (replacing the
   * entry of its nonce; the same nonce twice in one list, the last one wins) and delete by nonce. Written
   * atomically with the rest of the commit, never relaxed by the engine: an entry is durable before its transaction
   * is broadcast (docs/decisions/0051).
   */
  chainTransactions?: { put?: JournalEntry[]; delete?: number[] }
  sentProofs?: SentProofRecord[]
  /** Put by key (channelKey, secrethash, addedNonce): a second put with removedNonce replaces the first. */
  sentLocks?: SentLockRecord[]
  /** Put by key (channelKey, nonce): a later put under the same key replaces it, in the same commit too. */
  received?: ReceivedRecord[]
  meta?: Partial<Meta>
}

export type Loaded = {
  /** Written when the store is created, so always there. */
  meta: Meta
  snapshot?: Snapshot
  changes: StoredChange[]
  outbox: OutboxRecord[]
  transactions: TransactionRecord[]
  /** The transaction journal, in nonce order. */
  chainTransactions: JournalEntry[]
}

/** A whole store as plain data; the first row's meta says whose it is. */
export type StorageDump = {
  format: 'sluice-dump'
  meta: Meta
  snapshot?: Snapshot
  changes: StoredChange[]
  events: StoredEvent[]
  payments: PaymentRecord[]
  chainEvents: StoredChainEvent[]
  outbox: OutboxRecord[]
  transactions: TransactionRecord[]
  sentProofs?: SentProofRecord[]
  sentLocks?: SentLockRecord[]
  /** Absent in dumps written before schema 3. */
  received?: ReceivedRecord[]
  /** The transaction journal, in nonce order; absent in dumps written before schema 5 (then an import keeps none). */
  chainTransactions?: JournalEntry[]
}

export class StorageError extends SluiceError {
  override name: string = 'StorageError'
  override readonly code: string = 'STORAGE'
}

/** Another instance already holds this node's store (another tab, another process). */
export class StorageLockedError extends StorageError {
  override name = 'StorageLockedError' as const
  override readonly code = 'STORAGE_LOCKED' as const
}

/** The store was closed (by `close`, or by the engine because another connection upgrades or deletes it). */
export class StorageClosedError extends StorageError {
  override name = 'StorageClosedError' as const
  override readonly code = 'STORAGE_CLOSED' as const
}

/** The stored data has a schema newer than this code knows (written by a newer Sluice). */
export class StorageVersionError extends StorageError {
  override name = 'StorageVersionError' as const
  override readonly code = 'STORAGE_VERSION' as const
}

/** A dump of another node, another chain, or older than what is stored. */
export class DumpRejectedError extends StorageError {
  override name = 'DumpRejectedError' as const
  override readonly code = 'DUMP_REJECTED' as const
}

/**
 * This instance does not hold (or no longer holds) the lease of what it tried to write (docs/decisions/0075): another
 * instance took over, so this one must stop writing and signing at once.
 */
export class LeaseLostError extends StorageError {
  override name = 'LeaseLostError' as const
  override readonly code = 'LEASE_LOST' as const
}
