import type { Address, Hex } from 'viem'
import type { ChainClient } from '../../chain/chainClient.ts'
import { readFeeMarket } from '../../chain/feeMarket.ts'
import { claimedAmount, claimIouCall, readSessionSettled } from '../../chain/oneToN.ts'
import { read } from '../../chain/reads.ts'
import { simulateCall } from '../../chain/simulate.ts'
import type { SentTransaction, TransactionQueue } from '../../chain/transactionQueue.ts'
import { UserDeposit } from '../../contracts/index.ts'
import { claimTiming, gasCostInTokens, worthClaiming, type TokenPrice } from '../claims.ts'
import { sessionKey, type StoredIou } from '../iou.ts'
import { errorLine } from '../../monitor/serviceAccount.ts'
import type { PfsStore } from './store.ts'

export type ClaimRunnerParameters = {
  chain: ChainClient
  queue: TransactionQueue
  store: PfsStore
  oneToN: Address
  userDeposit: Address
  /** The service token's price in ETH, to weigh a claim's gas against what it pays. */
  tokenPrice: TokenPrice
  /** The service token's decimals. */
  tokenDecimals: () => Promise<number>
  /** The latest confirmed block. */
  latestBlock: () => bigint
  /** How long a session looked at and left (not worth its gas yet, the chain refusing) waits before the next look. */
  lookAgainMs?: number
  onError(where: string, error: unknown): void
  onSent?(description: string, hash: Hex): void
  onClaimed?(stored: StoredIou): void
  /** Told why a session is left unclaimed for now, when the reason changes (not worth its gas yet, refused by the chain). */
  onLeft?(stored: StoredIou, note: string): void
}

/** The key a claim's transaction has in the queue's journal: one per session. */
const claimKey = (stored: StoredIou) => `claim:${sessionKey(stored.iou.sender, stored.iou.expirationBlock)}`

/**
 * Claims the IOU sessions the service holds through OneToN (docs/decisions/0072), when due (claims.ts: near their end,
 * or at once when the sender's deposit is at risk) and worth their gas. Before a claim it reads whether the session was
 * paid already (anyone may send an IOU to OneToN: it pays the service all the same), the sender's deposit, and
 * simulates the call; the queue journals the transaction under the session's key, so a restart joins it rather than
 * claiming twice. A session is marked claimed once the chain says it is paid, expired once it can no longer be.
 */
export class ClaimRunner {
  private readonly running = new Set<string>()
  /** By session key: when it may be looked at again, and the IOU amount it was looked at with (a raise looks at once). */
  private readonly lookedAt = new Map<string, { until: number; amount: bigint; atRisk: boolean }>()
  private stopped = false

  constructor(private readonly p: ClaimRunnerParameters) {}

  /** Starts a look at every held session that is due and not under way; does not wait for them. */
  runDue(): void {
    if (this.stopped) return
    const latest = this.p.latestBlock()
    const now = Date.now()
    for (const stored of this.p.store.ious()) {
      if (stored.status !== 'held' && stored.status !== 'claiming') continue
      const key = claimKey(stored)
      if (this.running.has(key)) continue
      const joined = this.p.queue.outcome(key)
      const timing = claimTiming(stored, latest)
      // A claim under way when the service stopped, not journaled yet: looked at again at once.
      if (!joined && timing === 'wait' && stored.status !== 'claiming') continue
      const looked = this.lookedAt.get(key)
      if (!joined && looked && looked.until > now && looked.amount === stored.iou.amount && looked.atRisk === !!stored.atRisk) continue
      this.running.add(key)
      void (joined ? this.join(stored, joined) : this.look(stored, timing === 'expired' ? 'expired' : 'due'))
        .catch((error: unknown) => {
          if (!this.stopped) this.p.onError(`claim of ${stored.iou.sender}'s IOU (expiration ${stored.iou.expirationBlock})`, error)
          this.later(stored)
        })
        .finally(() => this.running.delete(key))
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    while (this.running.size > 0) await new Promise((r) => setTimeout(r, 10))
  }

  private later(stored: StoredIou): void {
    this.lookedAt.set(claimKey(stored), { until: Date.now() + (this.p.lookAgainMs ?? 60_000), amount: stored.iou.amount, atRisk: !!stored.atRisk })
  }

  /** Writes what became of a session still held or being claimed; returns the record written (undefined: it was done already). */
  private async write(stored: StoredIou, next: Partial<StoredIou>): Promise<StoredIou | undefined> {
    return this.p.store.transact((tx) => {
      // Only the lease holder claims (docs/decisions/0077): a former holder's write is refused here, as its journal's.
      tx.requireLease()
      const current = tx.iou(stored.iou.sender, stored.iou.expirationBlock)
      if (!current || (current.status !== 'held' && current.status !== 'claiming')) return undefined
      const written = { ...current, ...next }
      tx.putIou(written)
      return written
    })
  }

  /** Leaves the session held (a claim not sent, or not through) with why, and looks at it again later. */
  private async note(stored: StoredIou, note: string): Promise<void> {
    this.later(stored)
    if (stored.note === note && stored.status === 'held') return
    await this.write(stored, { status: 'held', note })
    if (stored.note !== note) this.p.onLeft?.(stored, note)
  }

  private async look(stored: StoredIou, timing: 'due' | 'expired'): Promise<void> {
    const { chain, oneToN } = this.p
    const { iou } = stored
    if (await readSessionSettled(chain, { oneToN, sender: iou.sender, receiver: iou.receiver, expirationBlock: iou.expirationBlock })) {
      await this.write(stored, { status: 'claimed', note: 'OneToN records the session as paid' })
      return
    }
    if (timing === 'expired') {
      await this.write(stored, { status: 'expired', note: `not claimed before block ${iou.expirationBlock}` })
      return
    }

    const balance = await read(chain, this.p.userDeposit, UserDeposit.abi, 'balances', [iou.sender])
    const transferable = balance < iou.amount ? balance : iou.amount
    if (transferable === 0n) return this.note(stored, "the sender's deposit is empty")
    const call = claimIouCall(oneToN, { ...iou })
    const simulation = await simulateCall(chain, call)
    if (!simulation.ok) return this.note(stored, `the contract refuses the claim now: ${simulation.reason}`)
    const [gas, market, decimals] = await Promise.all([
      chain.publicClient.estimateGas({ account: chain.address, to: call.to, data: call.data }),
      readFeeMarket(chain.publicClient),
      this.p.tokenDecimals(),
    ])
    const perGas = 'gasPrice' in market ? market.gasPrice : market.baseFee + market.priorityFee
    const cost = gasCostInTokens(gas * perGas, this.p.tokenPrice, decimals)
    if (!worthClaiming(transferable, cost)) return this.note(stored, `not worth its gas yet: it pays ${transferable}, its gas costs ${cost} in service tokens`)

    // From here no IOU of the session is taken (its sender is told to start another): a raise would go unpaid.
    const claiming = await this.write(stored, { status: 'claiming', note: `claiming ${iou.amount}` })
    if (!claiming || claiming.iou.amount !== iou.amount) return this.note(claiming ?? stored, 'raised meanwhile: looking again')
    let sent: SentTransaction
    try {
      sent = await this.p.queue.send(call, {
        key: claimKey(stored),
        // Mined after the expiration block, OneToN refuses it.
        deadline: iou.expirationBlock,
        onSubmitted: ({ hash }) => this.p.onSent?.(call.description, hash),
      })
    } catch (error) {
      // Not sent, or reverted: held again, and the chain is asked first at the next look.
      return this.note(stored, `the claim did not go through: ${errorLine(error)}`)
    }
    await this.claimed(stored, sent)
  }

  /** A claim sent before a restart (the queue's journal held it): its outcome decides, then the chain. */
  private async join(stored: StoredIou, joined: Promise<SentTransaction>): Promise<void> {
    const sent = await joined.catch((error: unknown) => {
      if ((error as { code?: string }).code !== 'TRANSACTION_REVERTED') throw error
      return undefined
    })
    if (sent) return this.claimed(stored, sent)
    await this.note(stored, 'the claim sent before a restart reverted')
  }

  private async claimed(stored: StoredIou, sent: SentTransaction): Promise<void> {
    const transferred = claimedAmount(this.p.oneToN, sent.receipt.logs)
    if (transferred === undefined) return this.note(stored, `the claim ${sent.hash} paid nothing: the sender's deposit was empty`)
    await this.write(stored, {
      status: 'claimed',
      claim: { transferred, transactionHash: sent.hash, blockNumber: sent.receipt.blockNumber },
      note: `claimed ${transferred} in block ${sent.receipt.blockNumber}`,
    })
    const after = this.p.store.iou(stored.iou.sender, stored.iou.expirationBlock)
    if (after) this.p.onClaimed?.(after)
  }
}
