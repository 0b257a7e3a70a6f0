import { TransactionReceiptNotFoundError, type Hex, type TransactionReceipt } from 'viem'
import { broadcast, signAttempt, type BroadcastOutcome } from './broadcast.ts'
import type { ChainClient } from './chainClient.ts'
import { ChainRpcError, NonceTakenError, TransactionQueueStoppedError, TransactionRevertedError } from './errors.ts'
import { readFeeMarket } from './feeMarket.ts'
import { affordablePricePerGas, atMost, bumpDue, deadlineRisk, initialFees, replacementFees, urgencyAt, type BumpPolicy, type FeeMarket } from './fees.ts'
import { revertReason } from './revertReason.ts'
import type { JournalEntry, TransactionJournal } from './transactionJournal.ts'
import type { TransactionRisk } from './transactionRisk.ts'

/** Blocks a used nonce may show no receipt of ours before it counts as taken by someone else (an endpoint's receipts can lag). */
const NONCE_TAKEN_AFTER_BLOCKS = 3n
/** Gas of a plain transfer: what fills a nonce nobody will use (a gap). */
const TRANSFER_GAS = 21_000n

/** A send's answer: the transaction mined (the version that was), its nonce and receipt. */
export type SentTransaction = { hash: Hex; nonce: number; receipt: TransactionReceipt }

/** Told each time a signed version of a transaction is broadcast. */
export type OnSubmitted = (submitted: { hash: Hex; nonce: number }) => void | Promise<void>

export type Waiter = { resolve: (sent: SentTransaction) => void; reject: (error: unknown) => void }

/** What the queue keeps of a journal entry beside the journaled part. */
export type Tracked = {
  entry: JournalEntry
  waiters: Waiter[]
  /** Blocks on top of its block before its senders are told. */
  confirmations: bigint
  /** Its senders were told (mined and confirmed): it stays only to be sent again if a deep reorg takes it away. */
  result?: SentTransaction | TransactionRevertedError
  onSubmitted?: OnSubmitted | undefined
  /** The head at which the newest attempt was last broadcast: once per block is enough. */
  broadcastAt?: bigint
  /** Raise the fee at the next look, whatever the blocks waited (the market rose past it). */
  repriceNow?: boolean
  /** The head at which its nonce was first seen used without a receipt of ours. */
  takenSince?: bigint
  /** The risk last reported, as text, to report only changes. */
  risk?: string
}

export type TransactionTrackerParameters = {
  chain: ChainClient
  journal: TransactionJournal
  /** The operator's cap per gas, if any. */
  cap: bigint | undefined
  /** Blocks a done transaction stays in the journal, its block checked. */
  keepBlocks: bigint
  /** The queue's confirmations: what a transaction filling a gap waits for. */
  confirmations: bigint
  policy: BumpPolicy
  pollingInterval: number
  onRisk?: ((nonce: number, risk: TransactionRisk | undefined) => void) | undefined
  onError?: ((error: unknown) => void) | undefined
  now: () => number
}

export type TransactionTracker = {
  /** The transactions under way (and done ones kept for a deep reorg), by nonce. */
  readonly tracked: Map<number, Tracked>
  /** The chain's head at the last look. */
  readonly lastHead: bigint | undefined
  /** Replacements at a higher fee signed since the start. */
  readonly replaced: number
  /** Looks at the chain after `delay` ms (0: at once), then every polling interval while anything is tracked. */
  schedule(delay: number): void
  /** The attempt is out: journaled as sent, and its sender told its hash. */
  sent(t: Tracked, head: bigint): Promise<void>
  /** The outcome of the transaction tracked under `key`, as a send gives it; undefined when none is. */
  outcome(key: string): Promise<SentTransaction> | undefined
  /** Looks no more; resolves once the look under way is over, its waiters told the queue stopped. */
  stop(): Promise<void>
}

/**
 * What follows the account's transactions once they are sent (docs/decisions/0054): every polling interval while any
 * is under way, one look at the chain for each in nonce order. A receipt found; its block checked until the
 * confirmations (and `keepBlocks` after, for a deep reorg): replaced, the transaction is sent again; an offer not mined
 * for a few blocks raised by at least 12.5 % within the cap (at every block near its deadline); the newest version
 * broadcast again once a block (an endpoint may have dropped it); a deadline's risk told; a nonce mined by a
 * transaction we never signed given up (NONCE_TAKEN); a nonce below ours that nothing will use filled.
 */
export function createTransactionTracker({
  chain,
  journal,
  cap,
  keepBlocks,
  confirmations,
  policy,
  pollingInterval,
  onRisk,
  onError,
  now,
}: TransactionTrackerParameters): TransactionTracker {
  const { publicClient, address } = chain
  const account = chain.walletClient.account
  const tracked = new Map<number, Tracked>()
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let looking: Promise<void> | undefined
  let lastHead: bigint | undefined
  /** Replacements at a higher fee signed since the start (what the metrics count). */
  let replaced = 0

  /** The attempt is out: journaled as sent, and its sender told its hash. */
  async function sent(t: Tracked, head: bigint): Promise<void> {
    t.broadcastAt = head
    if (t.entry.status === 'signed') {
      t.entry = { ...t.entry, status: 'sent' }
      await journal.put(t.entry)
    }
    const newest = t.entry.attempts.at(-1)!
    await Promise.resolve(t.onSubmitted?.({ hash: newest.hash, nonce: t.entry.nonce })).catch((e: unknown) => onError?.(e))
  }

  function schedule(delay: number): void {
    if (stopped || tracked.size === 0) return
    if (timer !== undefined) {
      if (delay > 0) return
      clearTimeout(timer)
    }
    timer = setTimeout(() => {
      timer = undefined
      looking ??= look().finally(() => {
        looking = undefined
        schedule(pollingInterval)
      })
    }, delay)
  }

  /** One look at the chain for every transaction under way, in nonce order. */
  async function look(): Promise<void> {
    let head: bigint
    let used: number
    let pooled: number
    try {
      head = await publicClient.getBlockNumber({ cacheTime: 0 })
      // Only done transactions kept for a deep reorg, and no new block: nothing can have changed.
      if (head === lastHead && [...tracked.values()].every((t) => t.result)) return
      ;[used, pooled] = await Promise.all([
        publicClient.getTransactionCount({ address, blockTag: 'latest' }),
        publicClient.getTransactionCount({ address, blockTag: 'pending' }),
      ])
    } catch (e) {
      onError?.(new ChainRpcError('eth_blockNumber/eth_getTransactionCount', e))
      return
    }
    lastHead = head
    const reads = new Reads()
    for (const t of [...tracked.values()].sort((a, b) => a.entry.nonce - b.entry.nonce)) {
      if (stopped) return
      try {
        await follow(t, head, used, reads)
      } catch (e) {
        onError?.(e)
      }
    }
    if (!stopped) await fillGaps(head, used, pooled, reads).catch((e: unknown) => onError?.(e))
  }

  /** The market and the balance, read at most once per look. */
  class Reads {
    private market?: Promise<FeeMarket>
    private balance?: Promise<bigint>
    fees = () => (this.market ??= readFeeMarket(publicClient))
    funds = () =>
      (this.balance ??= publicClient.getBalance({ address }).catch((e: unknown) => {
        throw new ChainRpcError('eth_getBalance', e)
      }))
  }

  async function follow(t: Tracked, head: bigint, used: number, reads: Reads): Promise<void> {
    let e = t.entry
    if (e.status === 'mined' && e.mined) {
      const block = await publicClient.getBlock({ blockNumber: e.mined.blockNumber }).catch(() => undefined)
      if (block && block.hash === e.mined.blockHash) {
        if (t.result && head >= e.mined.blockNumber + keepBlocks) await forget(t)
        else if (!t.result && head >= e.mined.blockNumber + t.confirmations) await finish(t, e.mined.hash)
        return
      }
      if (block || head < e.mined.blockNumber) {
        // Its block was replaced (a reorg): the transaction may be gone with it. Follow it as unmined again.
        const { mined: _, ...rest } = e
        t.entry = e = { ...rest, status: 'sent' }
        t.broadcastAt = undefined
        // Its senders were told it was done: it is mined again all the same, as they were told.
        t.result = undefined
        await journal.put(e)
      } else return // the endpoint lags behind the block it gave the receipt of: look again next time
    }
    if (e.nonce < used) {
      // Its nonce is mined: by one of its attempts, or by a transaction we never signed.
      for (const attempt of [...e.attempts].reverse()) {
        const receipt = await publicClient.getTransactionReceipt({ hash: attempt.hash }).catch((error: unknown) => {
          if (error instanceof TransactionReceiptNotFoundError) return undefined
          throw new ChainRpcError('eth_getTransactionReceipt', error)
        })
        if (!receipt) continue
        t.entry = { ...e, status: 'mined', mined: { hash: attempt.hash, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash } }
        t.takenSince = undefined
        report(t, undefined)
        await journal.put(t.entry)
        if (head >= receipt.blockNumber + t.confirmations) await finish(t, attempt.hash, receipt)
        return
      }
      t.takenSince ??= head
      if (head - t.takenSince >= NONCE_TAKEN_AFTER_BLOCKS) await giveUp(t, new NonceTakenError(e.nonce, e.call.description))
      return
    }
    t.takenSince = undefined
    const newest = e.attempts.at(-1)!
    const urgency = urgencyAt(head, e.deadline, policy)
    if (e.deadline !== undefined) {
      const [market, balance] = await Promise.all([reads.fees(), reads.funds()])
      const risk = deadlineRisk({
        head,
        deadline: e.deadline,
        market,
        ...(cap !== undefined ? { cap } : {}),
        gas: e.gas,
        value: e.call.value ?? 0n,
        balance,
        policy,
      })
      // Not mined is a risk once the transaction has had a block: one sent near its deadline on purpose (a
      // monitoring service's update, allowed only in the window's last blocks) and mined in the next is not.
      const waited = head > e.attempts[0]!.signedAtBlock
      const said = risk?.reason === 'not_mined' && !waited ? undefined : risk
      report(t, said && { ...said, nonce: e.nonce, description: e.call.description, deadline: e.deadline, head, hash: newest.hash })
    }
    if (t.repriceNow || bumpDue(newest.signedAtBlock, head, urgency, policy)) {
      const [market, balance] = await Promise.all([reads.fees(), reads.funds()])
      const fees = replacementFees(newest.fees, market, urgency, atMost(affordablePricePerGas(balance, e.gas, e.call.value ?? 0n), cap))
      if (fees) {
        const attempt = await signAttempt(account, chain.chainId, e, fees, head)
        t.entry = e = { ...e, attempts: [...e.attempts, attempt] }
        await journal.put(e)
        replaced++
        t.repriceNow = false
        await broadcastNewest(t, head)
        return
      }
    }
    // Once per block: an endpoint may have dropped it (or never had it), and a node says "already known" to a repeat.
    if (t.broadcastAt === undefined || t.broadcastAt < head || e.status === 'signed') await broadcastNewest(t, head)
  }

  async function broadcastNewest(t: Tracked, head: bigint): Promise<void> {
    const outcome: BroadcastOutcome = await broadcast(publicClient, t.entry.attempts.at(-1)!.raw)
    switch (outcome.type) {
      case 'accepted':
        return sent(t, head)
      case 'feeTooLow':
        // The base fee rose past the offer (a pool evicts it then): raised at the next look, within the cap.
        t.repriceNow = true
        return
      case 'nonceUsed':
        // Mined meanwhile (by this or an earlier attempt): the next look finds the receipt.
        return
      case 'noFunds':
      case 'refused':
        onError?.(new ChainRpcError(`sending ${t.entry.call.description}`, new Error(outcome.detail)))
        return
      case 'unknown':
        onError?.(new ChainRpcError(`sending ${t.entry.call.description}`, outcome.error))
    }
  }

  /** Mined and confirmed: its senders told. It stays in the journal for `keepBlocks` more (a deep reorg sends it again). */
  async function finish(t: Tracked, hash: Hex, found?: TransactionReceipt): Promise<void> {
    const receipt =
      found ??
      (await publicClient.getTransactionReceipt({ hash }).catch((e: unknown) => {
        throw new ChainRpcError('eth_getTransactionReceipt', e)
      }))
    const reason = receipt.status === 'success' ? undefined : await revertReasonAt(t.entry.call, receipt)
    report(t, undefined)
    t.result = receipt.status === 'success' ? { hash, nonce: t.entry.nonce, receipt } : new TransactionRevertedError(t.entry.call.description, reason, hash)
    for (const w of t.waiters.splice(0)) t.result instanceof Error ? w.reject(t.result) : w.resolve(t.result)
  }

  /** Deep enough that no reorg the node expects can take it away: out of the journal. */
  async function forget(t: Tracked): Promise<void> {
    await journal.delete(t.entry.nonce)
    tracked.delete(t.entry.nonce)
  }

  async function giveUp(t: Tracked, error: Error): Promise<void> {
    await journal.delete(t.entry.nonce)
    tracked.delete(t.entry.nonce)
    report(t, undefined)
    onError?.(error)
    for (const w of t.waiters) w.reject(error)
  }

  function report(t: Tracked, risk: TransactionRisk | undefined): void {
    const text = risk ? `${risk.reason}:${'needed' in risk ? risk.needed : ''}` : undefined
    if (text === t.risk) return
    t.risk = text
    onRisk?.(t.entry.nonce, risk)
  }

  /**
   * A nonce below one of ours that no transaction will use (the journal lost it, or a transaction sent without one was
   * dropped) holds every later one back: it is filled with a transfer of nothing to ourselves. Only when the pool, too,
   * holds nothing there, so a transaction of ours the endpoint still has is never replaced.
   */
  async function fillGaps(head: bigint, used: number, pooled: number, reads: Reads): Promise<void> {
    const ours = [...tracked.keys()]
    if (ours.length === 0) return
    const highest = Math.max(...ours)
    for (let nonce = Math.max(used, pooled); nonce < highest; nonce++) {
      if (tracked.has(nonce)) continue
      const market = await reads.fees()
      const gap: JournalEntry = {
        nonce,
        call: { to: address, data: '0x', description: `a transfer of nothing to fill nonce ${nonce}` },
        gas: TRANSFER_GAS,
        attempts: [],
        status: 'signed',
        createdAt: now(),
      }
      const attempt = await signAttempt(account, chain.chainId, gap, initialFees(market, 'normal', cap), head)
      const t: Tracked = { entry: { ...gap, attempts: [attempt] }, waiters: [], confirmations }
      await journal.put(t.entry)
      tracked.set(nonce, t)
      await broadcastNewest(t, head)
    }
  }

  /** Why a mined transaction reverted: the same call replayed against the state of its block. */
  async function revertReasonAt(call: JournalEntry['call'], receipt: TransactionReceipt): Promise<string | undefined> {
    try {
      await publicClient.call({ account: address, ...(call.to ? { to: call.to } : {}), data: call.data, value: call.value, blockNumber: receipt.blockNumber })
      return undefined
    } catch (e) {
      return revertReason(e)
    }
  }

  function outcome(key: string): Promise<SentTransaction> | undefined {
    const t = [...tracked.values()].find((x) => x.entry.key === key)
    if (!t) return undefined
    if (t.result) return t.result instanceof Error ? Promise.reject(t.result) : Promise.resolve(t.result)
    const done = new Promise<SentTransaction>((resolve, reject) => t.waiters.push({ resolve, reject }))
    schedule(0)
    return done
  }

  return {
    tracked,
    get lastHead() {
      return lastHead
    },
    get replaced() {
      return replaced
    },
    schedule,
    sent,
    outcome,
    async stop() {
      stopped = true
      clearTimeout(timer)
      await looking
      const error = new TransactionQueueStoppedError(true)
      for (const t of tracked.values()) for (const w of t.waiters.splice(0)) w.reject(error)
    },
  }
}
