import { sleep } from '../../waits.ts'
import type { Hex } from 'viem'
import type { FeesAboveCapError, InsufficientFundsForGasError } from '../../chain/errors.ts'
import { transactionFailedChange } from '../../chain/transactions.ts'
import type { TransactionRisk } from '../../chain/transactionRisk.ts'
import { hasCode, withCode } from '../../errors.ts'
import type { Transaction } from '../../protocol/state/effects.ts'
import type { TransactionRecord } from '../../storage/storage.ts'
import type { Engine } from './engine.ts'

export type TransactionRunnerParameters = {
  engine: Pick<Engine, 'dispatch' | 'forget' | 'updateTransaction' | 'current'>
  /** The receipt of a transaction sent before a restart, if it has been mined. */
  receipt(hash: Hex): Promise<{ status: 'success' | 'reverted' } | undefined>
  /**
   * Sends what the record asks for (under the record's key, with the transaction's deadline: the queue joins a
   * transaction of that key still under way instead of sending another) and resolves once it is mined;
   * `onSubmitted` each time a version of it is broadcast.
   */
  send(record: TransactionRecord, onSubmitted: (sent: { hash: Hex; nonce: number }) => void): Promise<unknown>
  /** The transaction failed for good; called just before the core is told (it reverts the channel's transitional state). */
  onFailed(transaction: Transaction, error: unknown): void
  /** A duty with a deadline could not even be sent (the cap, the balance), or can again (undefined): for the owner. */
  onRisk?(key: string, risk: TransactionRisk | undefined): void
  /** Milliseconds before a duty that could not be sent is tried again; 5,000 by default. */
  retryMs?: number
  isStopping(): boolean
  /** Aborted when the node stops: a duty waiting to be tried again gives up waiting. */
  stopped?: AbortSignal
}

/**
 * The node's own duties on-chain: what protects its money whether or not its owner is there. Failing to send one
 * for a reason that passes (the endpoint, fees above the cap, a balance too low) is tried again until its deadline,
 * not given up: giving up an update would let the partner's old proof settle the channel.
 */
const DUTIES = new Set<Transaction['type']>(['update', 'settle', 'settleWithHistory', 'unlock', 'unlockWithHistory', 'registerSecret'])

/** Failures that pass: the chain's endpoint, its fees, the balance; a nonce another program took (sent again at the next). */
const PASSING = ['CHAIN_RPC', 'FEES_ABOVE_CAP', 'INSUFFICIENT_FUNDS_FOR_GAS', 'NONCE_TAKEN', 'TRANSACTION_QUEUE_STOPPED']

/**
 * Carries out the transaction intents the core's effects leave in the store: each record once at a time, under its
 * key in the transaction queue (so a restart joins the transaction the journal holds instead of sending another), the
 * hashes of its versions stored as they are broadcast (so a restart long after finds its receipt), and the record
 * dropped once it is mined or has failed for good. A failure becomes a `transactionFailed` change for the core. The
 * node's own duties (DUTIES) are tried again while the failure passes and their deadline has not, their risk reported.
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
    const known = record.hashes ?? (record.hash ? [record.hash] : [])
    if (record.status === 'sent' && known.length > 0) {
      // Sent before a restart: one of its versions may have been mined meanwhile (the queue forgets it 32 blocks on).
      for (const hash of [...known].reverse()) {
        const receipt = await this.p.receipt(hash).catch(() => undefined)
        if (!receipt) continue
        if (receipt.status !== 'success') await this.fail(record.transaction, new Error(`transaction ${hash} reverted`))
        return true
      }
    }
    let current = record
    const onSubmitted = ({ hash, nonce }: { hash: Hex; nonce: number }) => {
      const hashes = [...(current.hashes ?? (current.hash ? [current.hash] : [])), hash]
      current = { ...current, status: 'sent', hash, nonce, hashes: [...new Set(hashes)] }
      this.p.engine.updateTransaction(current)
    }
    for (;;) {
      try {
        await this.p.send(current, onSubmitted)
        this.p.onRisk?.(record.key, undefined)
        return true
      } catch (error) {
        // Stopping: the record stays in the store, and the next start carries it out.
        if (this.p.isStopping()) return false
        if (!(await this.tryAgain(record, error))) {
          this.p.onRisk?.(record.key, undefined)
          await this.fail(record.transaction, error)
          return true
        }
      }
    }
  }

  /** Whether a duty that failed to go out is tried again (after a wait), its risk told; false to give it up. */
  private async tryAgain(record: TransactionRecord, error: unknown): Promise<boolean> {
    const tx = record.transaction
    if (!DUTIES.has(tx.type) || !hasCode(error, ...PASSING)) return false
    const deadline = 'deadline' in tx ? tx.deadline : undefined
    const head = this.p.engine.current.blockNumber
    if (deadline !== undefined && head > deadline) return false
    if (deadline !== undefined) {
      const description = `${tx.type}${'channelId' in tx ? ` of channel ${tx.channelId}` : ''}`
      const feeCap = withCode<FeesAboveCapError>(error, 'FEES_ABOVE_CAP')
      const funds = withCode<InsufficientFundsForGasError>(error, 'INSUFFICIENT_FUNDS_FOR_GAS')
      if (feeCap) this.p.onRisk?.(record.key, { reason: 'fee_cap', needed: feeCap.asked, description, deadline, head })
      else if (funds?.required !== undefined) this.p.onRisk?.(record.key, { reason: 'balance', needed: funds.required, description, deadline, head })
    }
    const waited = await this.wait(this.p.retryMs ?? 5_000)
    return waited && !this.p.isStopping()
  }

  private async wait(ms: number): Promise<boolean> {
    await sleep(ms, this.p.stopped)
    return !this.p.stopped?.aborted
  }

  /** Tells the waiters first, then the core: a waiter that sees the channel revert then knows why. */
  private async fail(transaction: Transaction, error: unknown) {
    this.p.onFailed(transaction, error)
    await this.p.engine.dispatch(transactionFailedChange(transaction, error)).catch(() => {})
  }
}
