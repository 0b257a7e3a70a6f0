import { asStorageError } from './asStorageError.ts'
import type { BatchOp, CommitSession } from './serviceStore.ts'
import { StorageClosedError } from './storage.ts'

/** One batch of steps as a store puts it together (a service store's records and indexes are its own). */
export type Batch<Tx> = {
  /** The view of the next step: the batch's writes so far, and its own; `keep` adds its own to the batch's. */
  step(): { tx: Tx; keep(): void }
  /** What the kept steps write; none: nothing is written and the steps are answered at once. */
  ops(): BatchOp[]
  /** Once the batch is durable: the store's memory follows it. */
  apply(): void
}

/** What a batch's steps may ask of the session they run in. */
export type BatchContext = {
  /** Whether this instance holds the service's lease in the transaction that writes the batch (CommitSession). */
  leaseHeld: boolean
}

export type GroupCommitParameters<Tx> = {
  /** 'the monitoring service store': for its errors. */
  name: string
  newBatch(context: BatchContext): Batch<Tx>
  /** Writes a batch durably (`sync: true`). */
  write(ops: BatchOp[]): Promise<void>
  /**
   * Runs each batch in a session of the engine instead (PostgreSQL, src/storage/postgres/serviceStore.ts: one
   * transaction under the store's lock, the memory caught up with other instances first); its `write` then replaces
   * `write`. The function `body` returns is called once the batch is durable.
   */
  session?(body: (session: CommitSession) => Promise<(() => void) | undefined>): Promise<void>
}

type Pending<Tx> = { step: (tx: Tx) => unknown; resolve(value: unknown): void; reject(error: unknown): void }

/**
 * The group commit of the services' stores (the monitoring service's, docs/decisions/0031, and the pathfinding
 * service's, 0072): the steps queued while a write is in flight run, in order, each against the state the ones before
 * it leave, and their writes go in one batch. Only once that batch is durable are the steps' results given back and
 * the memory updated: nothing is acknowledged before it survives kill -9. A step that throws rejects alone, its
 * writes dropped; a failed write rejects the whole batch and every later step, and the store refuses everything after
 * it (the service stops).
 */
export class GroupCommit<Tx> {
  private queue: Pending<Tx>[] = []
  private writing = false
  private failure: Error | undefined
  private isClosed = false

  constructor(private readonly p: GroupCommitParameters<Tx>) {}

  /** Set once a write failed. */
  get failed(): Error | undefined {
    return this.failure
  }

  get closed(): boolean {
    return this.isClosed
  }

  /** Runs `step` in the next batch and resolves with what it returned once the batch is durable. */
  transact<T>(step: (tx: Tx) => T): Promise<T> {
    if (this.isClosed) return Promise.reject(new StorageClosedError(`${this.p.name} is closed`))
    if (this.failure) return Promise.reject(this.failure)
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ step, resolve: resolve as (value: unknown) => void, reject })
      if (!this.writing) void this.drain()
    })
  }

  /** Refuses new steps and waits for the writes under way (the store then closes its database). */
  async close(): Promise<void> {
    this.isClosed = true
    while (this.writing) await new Promise((r) => setTimeout(r, 5))
  }

  private async drain(): Promise<void> {
    this.writing = true
    try {
      while (this.queue.length > 0) {
        const batch = this.queue
        this.queue = []
        await this.commit(batch)
      }
    } finally {
      this.writing = false
    }
  }

  private async commit(steps: Pending<Tx>[]): Promise<void> {
    const session =
      this.p.session ??
      (async (body: (session: CommitSession) => Promise<(() => void) | undefined>) => {
        const after = await body({ leaseHeld: true, write: (ops) => this.p.write(ops) })
        after?.()
      })
    const done: { pending: Pending<Tx>; value: unknown }[] = []
    try {
      await session(async ({ leaseHeld, write }) => {
        const batch = this.p.newBatch({ leaseHeld })
        for (const pending of steps) {
          const { tx, keep } = batch.step()
          try {
            const value = pending.step(tx)
            keep()
            done.push({ pending, value })
          } catch (error) {
            pending.reject(error)
          }
        }
        const ops = batch.ops()
        if (ops.length > 0) await write(ops)
        return () => {
          if (ops.length > 0) batch.apply()
          for (const { pending, value } of done) pending.resolve(value)
        }
      })
    } catch (e) {
      this.failure = asStorageError(e, `writing ${this.p.name}`)
      for (const { pending } of done) pending.reject(this.failure)
      // A session that failed before its steps ran (the database unreachable) leaves them all to reject.
      for (const pending of steps) pending.reject(this.failure)
      for (const pending of this.queue.splice(0)) pending.reject(this.failure)
    }
  }
}
