import type { JournalEntry } from '../../chain/transactionJournal.ts'
import type { TransitionContext } from '../../protocol/state/access.ts'
import type { StateChange } from '../../protocol/state/changes.ts'
import { unhandledEffect, type Effect } from '../../protocol/state/effects.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import { transition } from '../../protocol/transition.ts'
import { checkJournalEntry, checkJournalNonce } from '../../storage/journalRecords.ts'
import { StorageError, type Commit, type Meta, type OutboxRecord, type Storage, type StoredChainEvent, type TransactionRecord } from '../../storage/storage.ts'
import { outboxRecord, paymentRecord, receivedHistory, sentHistory, storedEvent, syncedHistory, transactionRecord } from './records.ts'
import { hasCode } from '../../errors.ts'

/**
 * An effect as its commit left it: a send with the outbox record it was stored as, a transaction with its record
 * (what a restart finds again and carries out), the others as the core gave them.
 */
export type CommittedEffect =
  | (Extract<Effect, { type: 'send' }> & { record: OutboxRecord })
  | (Extract<Effect, { type: 'transaction' }> & { record: TransactionRecord })
  | Exclude<Effect, { type: 'send' | 'transaction' }>

/** What one committed change produced, handed to the effect handler to carry out once it is durable. */
export type Applied = {
  seq: number
  change: StateChange
  effects: CommittedEffect[]
}

export type Input = {
  change: StateChange
  /** Raw chain events stored with the change (debug API). */
  chainEvents?: StoredChainEvent[]
  meta?: Partial<Meta>
}

export type EngineParameters = {
  state: NodeState
  /** The seq of the last stored change. */
  seq: number
  /**
   * How many stored changes after the latest snapshot `state` was rebuilt from (replayed at the start). The next
   * snapshot covers them too: else a restart followed by a clean stop before any new change would leave them to
   * be replayed again, and again, at every start.
   */
  replayed?: number
  ctx: TransitionContext
  storage: Storage
  now: () => number
  /**
   * Take a snapshot (and drop the changes it covers) after this many changes, or after as many changes as the
   * state holds channels (ours and the token networks' graphs) if that is more: a snapshot's size follows the
   * channels, so its bytes per change stay the same however large the network (docs/decisions/0039).
   */
  snapshotEvery?: number
  /**
   * Also take one once no change has come for this long (ms), so that a restart after a quiet moment (a reload,
   * a closed tab) replays nothing: replaying a change runs its transition again, hashes and all (the signatures
   * were checked when it came), cold code in a fresh page's worker.
   */
  snapshotWhenIdle?: number
  /**
   * Called after each durable commit with what it applied, in order (the effect handler). Or given later with
   * `handEffectsTo`, when the effect handler is made after the engine: until then the engine commits nothing.
   */
  onApplied?: (applied: Applied[]) => void
}

/**
 * The one ordered dispatch loop: input -> transition (in memory) -> one durable commit of the changes and of
 * everything their effects leave behind -> effects handed out. Changes that arrive while a commit is in flight
 * are applied together in the next one (group commit), which is what makes durable storage fast enough.
 */
export class Engine {
  private state: NodeState
  private seq: number
  private sinceSnapshot = 0
  private queue: { input: Input; resolve: (a: Applied) => void; reject: (e: unknown) => void }[] = []
  private pendingDeletes: { outbox: string[]; transactions: string[]; transactionPuts: TransactionRecord[] } = {
    outbox: [],
    transactions: [],
    transactionPuts: [],
  }
  /** Journal writes for the next commit: by nonce, the entry to put or null to delete (the last write of a nonce wins). */
  private journal = new Map<number, JournalEntry | null>()
  private journalWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = []
  private running = false
  private snapshotWanted = false
  /** The changes after which the next snapshot is taken (snapshotEvery, or more for a state of many channels). */
  private snapshotAfter: number
  private closed = false
  private idleTimer: ReturnType<typeof setTimeout> | undefined
  private failed: unknown
  private idle: Promise<void> = Promise.resolve()
  private markIdle: () => void = () => {}
  /** Who carries out each durable commit: the loop runs only once there is one. */
  private onApplied: ((applied: Applied[]) => void) | undefined
  private markHanded: () => void = () => {}
  private readonly handed = new Promise<void>((resolve) => (this.markHanded = resolve))

  constructor(private readonly p: EngineParameters) {
    if (p.onApplied) {
      this.onApplied = p.onApplied
      this.markHanded()
    }
    this.state = p.state
    this.seq = p.seq
    this.sinceSnapshot = p.replayed ?? 0
    this.snapshotAfter = snapshotAfter(p.state, p.snapshotEvery)
  }

  /** The latest applied state (already durable, or about to be: read-only use). */
  get current(): NodeState {
    return this.state
  }

  get lastSeq(): number {
    return this.seq
  }

  /**
   * Hands the engine what carries out its commits (the effect handler), made after the engine because it drives the
   * engine too. Until then nothing is committed: what is dispatched, forgotten or updated meanwhile waits, in order,
   * for the first commit, which this starts.
   */
  handEffectsTo(onApplied: (applied: Applied[]) => void): void {
    if (this.onApplied) throw new Error('the engine hands its commits to one effect handler, given already')
    this.onApplied = onApplied
    this.markHanded()
    if (this.hasWork()) this.kick()
  }

  /** Queues a change; resolves with what it produced once that is durable. */
  dispatch(change: StateChange, extra: Omit<Input, 'change'> = {}): Promise<Applied> {
    if (this.failed) return Promise.reject(this.failed)
    return new Promise((resolve, reject) => {
      this.queue.push({ input: { change, ...extra }, resolve, reject })
      this.kick()
    })
  }

  /** Outbox entries acknowledged by peers, and transaction records done: deleted in the next commit. */
  forget(outbox: string[], transactions: string[] = []): void {
    this.pendingDeletes.outbox.push(...outbox)
    this.pendingDeletes.transactions.push(...transactions)
    this.kick()
  }

  /** Updates a transaction record (e.g. its hash once sent) in the next commit. */
  updateTransaction(record: TransactionRecord): void {
    this.pendingDeletes.transactionPuts.push(record)
    this.kick()
  }

  /**
   * Puts and deletes entries of the account's transaction journal (src/chain/transactionJournal.ts) in the next
   * commit, with whatever else it holds (group commit); resolves once that commit is durable, and rejects if it fails
   * (then the engine stops, as for a change). Writes of one nonce reach the store in the order they were made: within
   * a call the puts, then the deletes. An entry is copied and checked now: a bad one rejects this call alone.
   */
  writeJournal(write: { put?: JournalEntry[]; delete?: number[] }): Promise<void> {
    if (this.failed) return Promise.reject(this.failed)
    let puts: JournalEntry[]
    try {
      puts = structuredClone(write.put ?? [])
      for (const entry of puts) checkJournalEntry(entry)
      for (const nonce of write.delete ?? []) checkJournalNonce(nonce, 'journal nonce to delete')
    } catch (e) {
      return Promise.reject(hasCode(e, 'STORAGE') ? e : new StorageError(`a journal entry cannot be stored (${(e as Error).message})`, { cause: e }))
    }
    for (const entry of puts) this.journal.set(entry.nonce, entry)
    for (const nonce of write.delete ?? []) this.journal.set(nonce, null)
    return new Promise((resolve, reject) => {
      this.journalWaiters.push({ resolve, reject })
      this.kick()
    })
  }

  /** Commits a snapshot of the current state, if a change came since the last one, once what is queued is committed. */
  async snapshot(): Promise<void> {
    this.snapshotWanted = true
    this.kick()
    await this.settled()
  }

  /** No more snapshots of its own (the node stops and closes the store); dispatches still work. */
  close(): void {
    this.closed = true
    clearTimeout(this.idleTimer)
  }

  /** Resolves when nothing is queued or being committed (what is queued before `handEffectsTo` waits for it). */
  async settled(): Promise<void> {
    while (this.running || this.queue.length) await (this.onApplied ? this.idle : this.handed)
  }

  private kick() {
    if (this.running || this.failed || !this.onApplied) return
    this.running = true
    this.idle = new Promise((r) => (this.markIdle = r))
    queueMicrotask(() => void this.loop())
  }

  private async loop() {
    try {
      while (this.hasWork()) {
        const batch = this.queue.splice(0)
        const deletes = this.pendingDeletes
        this.pendingDeletes = { outbox: [], transactions: [], transactionPuts: [] }
        const journal = this.journal
        const journalWaiters = this.journalWaiters.splice(0)
        this.journal = new Map()
        const now = this.p.now()
        const commit: Required<Pick<Commit, 'changes' | 'events' | 'payments' | 'chainEvents' | 'sentProofs' | 'sentLocks' | 'received'>> &
          Commit &
          CommitOfBatch = {
          changes: [],
          sentProofs: [],
          sentLocks: [],
          received: [],
          events: [],
          payments: [],
          chainEvents: [],
          outbox: { put: [], delete: deletes.outbox },
          transactions: { put: [...deletes.transactionPuts], delete: deletes.transactions },
          chainTransactions: {
            put: [...journal.values()].filter((entry) => entry !== null),
            delete: [...journal].filter(([, entry]) => entry === null).map(([nonce]) => nonce),
          },
        }
        let state = this.state
        let seq = this.seq
        const applied: Applied[] = []
        try {
          for (const { input } of batch) {
            seq++
            const before = state
            const result = transition(state, input.change, this.p.ctx)
            state = result.state
            const effects = result.effects.map((effect, i) => recordEffect(commit, effect, { before, seq, index: i, now }))
            const received = receivedHistory(input.change, before, state)
            if (received) commit.received.push(received)
            const synced = syncedHistory(input.change, before, state)
            commit.sentProofs.push(...synced.proofs)
            commit.sentLocks.push(...synced.locks)
            commit.changes.push({ seq, time: now, change: input.change })
            if (input.chainEvents) commit.chainEvents.push(...input.chainEvents)
            if (input.meta) commit.meta = { ...commit.meta, ...input.meta }
            applied.push({ seq, change: input.change, effects })
          }
        } catch (error) {
          // A transition that throws is a bug in the core: nothing of the batch is committed, and nobody is left waiting.
          this.stop(error, batch, journalWaiters)
        }
        this.sinceSnapshot += batch.length
        if (this.sinceSnapshot >= this.snapshotAfter || (this.snapshotWanted && this.sinceSnapshot > 0)) {
          commit.snapshot = { seq, state }
          commit.pruneChangesUpTo = seq
          this.sinceSnapshot = 0
          this.snapshotWanted = false
          this.snapshotAfter = snapshotAfter(state, this.p.snapshotEvery)
        }
        // Only acknowledgements received (outbox rows to delete): nothing leaves the node on them, and if a crash of
        // the machine loses them, the messages go again and the peers answer again. Everything else is flushed
        // before its effects leave (write-ahead): sends, transactions, a received message's acknowledgement, and the
        // transaction journal (an entry is durable before its transaction is broadcast; a done one is not sent again).
        commit.relaxed =
          batch.length === 0 && !commit.snapshot && deletes.transactions.length === 0 && deletes.transactionPuts.length === 0 && journal.size === 0
        try {
          await this.p.storage.commit(commit)
        } catch (error) {
          // Nothing of this batch is durable, so nothing of it may take effect: stop, and let the shell report it.
          this.stop(error, batch, journalWaiters)
        }
        this.state = state
        this.seq = seq
        for (const w of journalWaiters) w.resolve()
        for (const [i, b] of batch.entries()) b.resolve(applied[i]!)
        if (applied.length) this.onApplied!(applied)
      }
      this.snapshotWanted = false
      this.armIdleSnapshot()
    } catch {
      // Reported through the rejected dispatches; the engine stays stopped.
    } finally {
      this.running = false
      this.markIdle()
    }
  }

  /** Stops the engine for good: the batch, what is queued and the journal's writers are rejected with `error`. */
  private stop(error: unknown, batch: { reject: (e: unknown) => void }[], journalWaiters: { reject: (e: unknown) => void }[]): never {
    this.failed = error
    for (const b of batch) b.reject(error)
    for (const q of this.queue.splice(0)) q.reject(error)
    for (const w of [...journalWaiters, ...this.journalWaiters.splice(0)]) w.reject(error)
    this.journal.clear()
    throw error
  }

  private hasWork(): boolean {
    return (
      this.queue.length > 0 ||
      this.pendingDeletes.outbox.length > 0 ||
      this.pendingDeletes.transactions.length > 0 ||
      this.pendingDeletes.transactionPuts.length > 0 ||
      this.journalWaiters.length > 0 ||
      (this.snapshotWanted && this.sinceSnapshot > 0)
    )
  }

  private armIdleSnapshot() {
    const after = this.p.snapshotWhenIdle
    clearTimeout(this.idleTimer)
    if (after === undefined || this.closed || this.sinceSnapshot === 0) return
    this.idleTimer = setTimeout(() => void this.snapshot(), after)
    // A quiet node's snapshot must not keep a Node.js process alive.
    ;(this.idleTimer as { unref?: () => void }).unref?.()
  }
}

/** The commit's part of what the transition left: what a restart must find again. */
type CommitOfBatch = Required<Pick<Commit, 'sentProofs' | 'sentLocks' | 'events' | 'payments'>> & {
  outbox: { put: OutboxRecord[] }
  transactions: { put: TransactionRecord[] }
}

/**
 * Adds to `commit` what one effect of a change must leave stored, and gives the effect as committed. Every kind
 * of effect has its case: a new one fails the build here (as in the effect handler) until it is decided what, if
 * anything, of it is stored.
 */
function recordEffect(commit: CommitOfBatch, effect: Effect, at: { before: NodeState; seq: number; index: number; now: number }): CommittedEffect {
  switch (effect.type) {
    case 'send': {
      const record = outboxRecord(effect, at.now)
      commit.outbox.put.push(record)
      const { proof, lock } = sentHistory(effect, at.before)
      if (proof) commit.sentProofs.push(proof)
      if (lock) commit.sentLocks.push(lock)
      return { ...effect, record }
    }
    case 'transaction': {
      const record = transactionRecord(effect, at.seq, at.index, at.now)
      commit.transactions.put.push(record)
      return { ...effect, record }
    }
    case 'event': {
      // Events and payments need keys of their own: the change's seq, then the effect's place in it.
      const key = at.seq * 1000 + Math.min(at.index, 999)
      commit.events.push(storedEvent(effect.event, key, at.now))
      const payment = paymentRecord(effect.event, key, at.now)
      if (payment) commit.payments.push(payment)
      return effect
    }
    // Nothing of these is stored beside the change that made them.
    case 'resolveSecret':
    case 'announceCapacity':
    case 'announceFees':
      return effect
    default:
      return unhandledEffect(effect)
  }
}

/** How many changes the next snapshot waits for: `every` (500), or one per channel the state holds if more. */
export function snapshotAfter(state: NodeState, every = 500): number {
  let channels = Object.keys(state.channels).length
  for (const network of Object.values(state.tokenNetworks)) channels += Object.keys(network.graph).length
  return Math.max(every, channels)
}

/** Rebuilds the state from a snapshot and the changes after it (their effects were stored when they happened). */
export function replay(
  base: NodeState,
  baseSeq: number,
  changes: { seq: number; change: StateChange }[],
  ctx: TransitionContext,
): { state: NodeState; seq: number } {
  let state = base
  let seq = baseSeq
  for (const c of changes) {
    state = transition(state, c.change, ctx).state
    seq = c.seq
  }
  return { state, seq }
}
