import type { Hex } from 'viem'
import { transactionFailedChange } from '../../chain/transactions.ts'
import type { Transaction } from '../../protocol/state/effects.ts'
import type { TransactionRecord } from '../../storage/storage.ts'
import type { Engine } from './engine.ts'

export type TransactionRunnerParameters = {
  engine: Pick<Engine, 'dispatch' | 'forget' | 'updateTransaction'>
  /** The receipt of a transaction sent before a restart, if it has been mined. */
  receipt(hash: Hex): Promise<{ status: 'success' | 'reverted' } | undefined>
  /** Sends what the record asks for and resolves once it is mined; `onSubmitted` once it is out. */
  send(record: TransactionRecord, onSubmitted: (sent: { hash: Hex; nonce: number }) => void): Promise<unknown>
  /** The transaction failed for good; called just before the core is told (it reverts the channel's transitional state). */
  onFailed(transaction: Transaction, error: unknown): void
  isStopping(): boolean
}

/**
 * Carries out the transaction intents the core's effects leave in the store: each record once at a time, its hash
 * stored once it is sent (so a restart looks for its receipt instead of sending it again), and the record dropped
 * once it is mined or has failed for good. A failure becomes a `transactionFailed` change for the core.
 */
export class TransactionRunner {
  private readonly running = new Set<string>()

  constructor(private readonly p: TransactionRunnerParameters) {}

  /** Starts carrying out `record` unless it is under way already; resolves when it is done. */
  run(record: TransactionRecord): Promise<void> {
    if (this.running.has(record.key)) return Promise.resolve()
    this.running.add(record.key)
    return this.carryOut(record).then(
      (done) => {
        this.running.delete(record.key)
        if (done) this.p.engine.forget([], [record.key])
      },
      () => void this.running.delete(record.key),
    )
  }

  /** True once the record is done with (mined, or failed for good); false when the node stopped meanwhile. */
  private async carryOut(record: TransactionRecord): Promise<boolean> {
    if (record.status === 'sent' && record.hash) {
      // Sent before a restart: it may have been mined meanwhile.
      const receipt = await this.p.receipt(record.hash).catch(() => undefined)
      if (receipt) {
        if (receipt.status !== 'success') await this.fail(record.transaction, new Error(`transaction ${record.hash} reverted`))
        return true
      }
    }
    try {
      await this.p.send(record, ({ hash, nonce }) => this.p.engine.updateTransaction({ ...record, status: 'sent', hash, nonce }))
    } catch (error) {
      // Stopping: the record stays in the store, and the next start carries it out.
      if (this.p.isStopping()) return false
      await this.fail(record.transaction, error)
    }
    return true
  }

  /** Tells the waiters first, then the core: a waiter that sees the channel revert then knows why. */
  private async fail(transaction: Transaction, error: unknown) {
    this.p.onFailed(transaction, error)
    await this.p.engine.dispatch(transactionFailedChange(transaction, error)).catch(() => {})
  }
}
