import {
  BaseError,
  decodeErrorResult,
  ExecutionRevertedError,
  InsufficientFundsError,
  TransactionReceiptNotFoundError,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem'
import { broadcast, signAttempt, type BroadcastOutcome } from './broadcast.ts'
import type { ChainClient } from './chainClient.ts'
import {
  ChainRpcError,
  ConfirmationTimeoutError,
  FeesAboveCapError,
  InsufficientFundsForGasError,
  NonceTakenError,
  TransactionQueueStoppedError,
  TransactionRevertedError,
} from './errors.ts'
import { readFeeMarket } from './feeMarket.ts'
import {
  affordablePricePerGas,
  bumpDue,
  deadlineRisk,
  initialFees,
  leastPricePerGas,
  maxPricePerGas,
  replacementFees,
  urgencyAt,
  type BumpPolicy,
  type FeeMarket,
} from './fees.ts'
import { memoryJournal, type JournalEntry, type TransactionJournal } from './transactionJournal.ts'
import type { TransactionRisk } from './transactionRisk.ts'

export type { TransactionRisk } from './transactionRisk.ts'

/** One contract call to send: already ABI-encoded, with a description for errors and logs. `to` absent: a contract creation. */
export type ChainCall = {
  to?: Address
  data: Hex
  value?: bigint
  /** e.g. `TokenNetwork.closeChannel(7)`: names the call in errors. */
  description: string
}

export type SendOptions = {
  /**
   * Called each time a signed version of the transaction is broadcast (the first, and each replacement at a higher
   * fee), before it is mined: persist the hashes here to find the receipt again after a restart.
   */
  onSubmitted?: (submitted: { hash: Hex; nonce: number }) => void | Promise<void>
  /** The last block in which the transaction can still do its work: priced harder as it nears, its risk reported. */
  deadline?: bigint
  /**
   * What the transaction is for, when the caller must find it again after a restart (a transaction intent's key): a
   * send under a key whose transaction is still under way joins it instead of sending another.
   */
  key?: string
  /**
   * Blocks on top of its block before this send resolves, instead of the queue's `confirmations`: 0 for a transaction
   * the next one depends on (an approve before a deposit), since nonce order keeps them in order, a reorg included.
   */
  confirmations?: bigint
  /**
   * How long this send waits for its transaction to be mined and confirmed, instead of the queue's `timeoutMs`;
   * `Infinity` waits for ever (the node's own duties). Past it the send rejects with ConfirmationTimeoutError and the
   * transaction goes on: its caller is answered, nothing is given up.
   */
  timeoutMs?: number
}

export type SentTransaction = { hash: Hex; nonce: number; receipt: TransactionReceipt }

/** One transaction under way, as the queue shows it. */
export type PendingTransaction = Pick<JournalEntry, 'nonce' | 'status' | 'deadline' | 'createdAt'> & {
  description: string
  /** The newest signed version. */
  hash: Hex
  attempts: number
  maxPricePerGas: bigint
}

export type CreateTransactionQueueParameters = BumpPolicy & {
  /** Percent added to the gas estimate; 20 by default. */
  gasMargin?: number
  /** Where every transaction is written before it is broadcast; in memory by default (nothing survives the process). */
  journal?: TransactionJournal
  /** The operator's cap per gas in wei (`--max-fee-per-gas`): maxFeePerGas, or the gas price on a chain without a base fee. */
  maxFeePerGas?: bigint
  /** Blocks on top of a transaction's block before `send` resolves (its block then checked to be the chain's); 0 by default. */
  confirmations?: bigint
  /**
   * Blocks a mined transaction stays in the journal, its block checked, after `send` resolved: a reorg deeper than the
   * confirmations within them sends it again rather than leave its nonce to another (32 by default, the block
   * watcher's reorg depth).
   */
  keepBlocks?: bigint
  /** Milliseconds between looks at the chain while transactions are under way; the chain client's polling interval by default. */
  pollingInterval?: number
  /** How long a send waits for its transaction to be mined and confirmed before ConfirmationTimeoutError (it goes on); for ever by default. */
  timeoutMs?: number
  /** A transaction with a deadline became at risk of missing it (`risk`), or no longer is (undefined). */
  onRisk?: (nonce: number, risk: TransactionRisk | undefined) => void
  /** A look at the chain failed (it is tried again at the next), or a nonce was found taken: for the log. */
  onError?: (error: unknown) => void
  now?: () => number
}

export type TransactionQueue = {
  /**
   * Estimates the gas (a call the chain would revert is refused here: TransactionRevertedError), prices it (EIP-1559,
   * or a gas price), checks the balance, signs it with the next nonce, journals it, broadcasts it, and resolves once it
   * is mined and `confirmations` deep in the chain. Until then the queue raises its fee when it is not mined, sends it
   * again when an endpoint or a reorg lost it, and reports the risk of missing its deadline. Nonces follow the order of
   * calls; receipts are awaited in parallel.
   *
   * Throws, with nothing sent and no nonce used: TransactionRevertedError (the estimate), InsufficientFundsForGasError,
   * FeesAboveCapError, ChainRpcError. Once sent: TransactionRevertedError (mined and reverted), NonceTakenError
   * (its nonce was mined by a transaction this queue never signed), TransactionQueueStoppedError (the queue stopped
   * first: `journaled`, the transaction goes on at the next start; otherwise it was not sent).
   */
  send(call: ChainCall, options?: SendOptions): Promise<SentTransaction>
  /**
   * Runs `task` once no other task with the same key runs: for read-then-send sequences that must not
   * interleave, such as allowance check + approve + deposit on one token and spender.
   */
  exclusive<T>(key: string, task: () => Promise<T>): Promise<T>
  /**
   * Loads the journal and resumes what it holds (sends again what the chain lacks, follows the rest), trying again while
   * the endpoint fails. A send loads it too.
   */
  start(): Promise<void>
  /**
   * The outcome of the transaction the journal holds under `key` (sent before a restart), as `send` gives it; undefined
   * when it holds none. Call it after `start`.
   */
  outcome(key: string): Promise<SentTransaction> | undefined
  /** Stops following the chain; waiting sends reject with TransactionQueueStoppedError. The journal keeps the rest. */
  stop(): Promise<void>
  /** The transactions under way, in nonce order. */
  pending(): PendingTransaction[]
  /** Calls whose transaction is not broadcast yet. */
  readonly waiting: number
}

export type SendTransactionErrorType =
  | TransactionRevertedError
  | InsufficientFundsForGasError
  | FeesAboveCapError
  | ChainRpcError
  | NonceTakenError
  | TransactionQueueStoppedError

/** Blocks a used nonce may show no receipt of ours before it counts as taken by someone else (an endpoint's receipts can lag). */
const NONCE_TAKEN_AFTER_BLOCKS = 3n
/** Gas of a plain transfer: what fills a nonce nobody will use (a gap). */
const TRANSFER_GAS = 21_000n

type Waiter = { resolve: (sent: SentTransaction) => void; reject: (error: unknown) => void }

/** What the queue keeps of an entry beside the journaled part. */
type Tracked = {
  entry: JournalEntry
  waiters: Waiter[]
  /** Blocks on top of its block before its senders are told. */
  confirmations: bigint
  /** Its senders were told (mined and confirmed): it stays only to be sent again if a deep reorg takes it away. */
  result?: SentTransaction | TransactionRevertedError
  onSubmitted?: SendOptions['onSubmitted']
  /** The head at which the newest attempt was last broadcast: once per block is enough. */
  broadcastAt?: bigint
  /** Raise the fee at the next look, whatever the blocks waited (the market rose past it). */
  repriceNow?: boolean
  /** The head at which its nonce was first seen used without a receipt of ours. */
  takenSince?: bigint
  /** The risk last reported, as text, to report only changes. */
  risk?: string
}

/**
 * The one transaction queue of an account (docs/decisions/0010, 0054). It keeps the nonce, and every transaction
 * it signs is in its journal before it is broadcast: after a crash it finds each nonce it used and the bytes it
 * signed, and never leaves a gap nor uses one nonce for two calls. While transactions are under way it looks at the
 * chain every polling interval: a receipt found, a block replaced by a reorg (sent again), an offer not mined for a
 * few blocks (raised by at least 12.5 %, up to the cap; at every block near its deadline), a transaction an endpoint
 * dropped (broadcast again), a nonce left unused below one of ours (filled with a transfer to ourselves).
 */
export function createTransactionQueue(
  chain: ChainClient,
  {
    gasMargin = 20,
    journal = memoryJournal(),
    maxFeePerGas: cap,
    confirmations = 0n,
    keepBlocks = 32n,
    timeoutMs: defaultTimeoutMs = Number.POSITIVE_INFINITY,
    pollingInterval = chain.publicClient.pollingInterval,
    onRisk,
    onError,
    now = Date.now,
    ...policy
  }: CreateTransactionQueueParameters = {},
): TransactionQueue {
  const { publicClient, address } = chain
  const account = chain.walletClient.account
  const tracked = new Map<number, Tracked>()
  let nextNonce = 0
  let loading: Promise<void> | undefined
  let tail: Promise<unknown> = Promise.resolve()
  let waiting = 0
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let looking: Promise<void> | undefined
  /** The head of the last look. */
  let lastHead: bigint | undefined
  /** Ends the wait of a start that failed to load, when the queue stops. */
  let wakeStart = () => {}

  /** Loads the journal once (again after a failure) and takes the next nonce after every one used. */
  function load(): Promise<void> {
    if (stopped) return Promise.reject(new TransactionQueueStoppedError(false))
    loading ??= (async () => {
      const [entries, mined, pooled] = await Promise.all([
        journal.load(),
        publicClient.getTransactionCount({ address, blockTag: 'latest' }),
        publicClient.getTransactionCount({ address, blockTag: 'pending' }),
      ]).catch((e: unknown) => {
        throw e instanceof ChainRpcError ? e : new ChainRpcError('eth_getTransactionCount', e)
      })
      for (const entry of entries) if (!tracked.has(entry.nonce)) tracked.set(entry.nonce, { entry, waiters: [], confirmations })
      const journaled = entries.length > 0 ? entries.at(-1)!.nonce + 1 : 0
      // Transactions in the pool that the journal does not hold (sent before there was one): never reuse their nonces.
      nextNonce = Math.max(mined, journaled, pooled)
      if (tracked.size > 0) schedule(0)
    })()
    loading.catch(() => (loading = undefined))
    return loading
  }

  /** Loads the journal, trying again (with a doubling wait) while the endpoint fails, until loaded or stopped. */
  async function start(): Promise<void> {
    for (let wait = 500; ; wait = Math.min(wait * 2, 30_000)) {
      try {
        return await load()
      } catch (error) {
        if (stopped) throw error
        onError?.(error)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait)
          wakeStart = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
    }
  }

  async function submit(call: ChainCall, options: SendOptions): Promise<Tracked> {
    await load()
    if (options.key !== undefined) {
      const joined = [...tracked.values()].find((t) => t.entry.key === options.key)
      if (joined) {
        joined.onSubmitted ??= options.onSubmitted
        if (options.confirmations !== undefined && options.confirmations < joined.confirmations) joined.confirmations = options.confirmations
        return joined
      }
    }
    let gasEstimate: bigint
    try {
      // No fees in the estimate: an account without ETH still gets one, and then the clear error below.
      gasEstimate = await publicClient.estimateGas({ account: address, ...(call.to ? { to: call.to } : {}), data: call.data, value: call.value })
    } catch (e) {
      throw sendError(call, address, e)
    }
    const gas = (gasEstimate * BigInt(100 + gasMargin)) / 100n
    const value = call.value ?? 0n
    let market: FeeMarket
    let balance: bigint
    let head: bigint
    try {
      ;[market, balance, head] = await Promise.all([
        readFeeMarket(publicClient),
        publicClient.getBalance({ address }),
        publicClient.getBlockNumber({ cacheTime: 0 }),
      ])
    } catch (e) {
      throw e instanceof ChainRpcError ? e : new ChainRpcError('eth_getBalance/eth_blockNumber', e)
    }
    const least = leastPricePerGas(market)
    if (cap !== undefined && cap < least) throw new FeesAboveCapError(call.description, least, cap)
    const affordable = affordablePricePerGas(balance, gas, value)
    if (affordable < least) throw new InsufficientFundsForGasError(address, balance, gas * least + value)
    const urgency = urgencyAt(head, options.deadline, policy)
    let fees = initialFees(market, urgency, min(cap, affordable))

    for (let tries = 1; ; tries++) {
      const nonce = nextNonce
      const attempt = await signAttempt(account, chain.chainId, { nonce, call, gas }, fees, head)
      const entry: JournalEntry = {
        nonce,
        ...(options.key !== undefined ? { key: options.key } : {}),
        call: { ...(call.to ? { to: call.to } : {}), data: call.data, ...(call.value ? { value: call.value } : {}), description: call.description },
        gas,
        ...(options.deadline !== undefined ? { deadline: options.deadline } : {}),
        attempts: [attempt],
        status: 'signed',
        createdAt: now(),
      }
      // Durable before it leaves: after a crash from here on, the journal has it and the next start sends it again.
      await journal.put(entry)
      nextNonce = nonce + 1
      const t: Tracked = {
        entry,
        waiters: [],
        confirmations: options.confirmations ?? confirmations,
        ...(options.onSubmitted ? { onSubmitted: options.onSubmitted } : {}),
      }
      tracked.set(nonce, t)
      const outcome = await broadcast(publicClient, attempt.raw)
      if (outcome.type === 'accepted' || outcome.type === 'unknown') {
        // Unknown: it may be in the pool; the next look broadcasts it again and finds out.
        if (outcome.type === 'accepted') await sent(t, head)
        return t
      }
      // Refused for good, and nothing signed after it: the nonce is free again, the entry goes, and the caller is told.
      tracked.delete(nonce)
      await journal.delete(nonce)
      nextNonce = nonce
      if (outcome.type === 'nonceUsed' && tries < 3) {
        // Someone else used it meanwhile (or the endpoint's pending count lagged): take the chain's next nonce and sign again.
        nextNonce = Math.max(nonce + 1, await publicClient.getTransactionCount({ address, blockTag: 'pending' }).catch(() => nonce + 1))
        continue
      }
      if (outcome.type === 'nonceUsed') throw new NonceTakenError(nonce, call.description)
      if (outcome.type === 'noFunds') throw new InsufficientFundsForGasError(address, balance, gas * maxPricePerGas(fees) + value)
      if (outcome.type === 'feeTooLow') {
        // The base fee rose between the read and the broadcast: priced again from a fresh read, while the cap has room.
        const fresh = tries < 3 ? await readFeeMarket(publicClient).catch(() => undefined) : undefined
        const raised = fresh && replacementFees(fees, fresh, urgency, min(cap, affordable))
        if (raised) {
          fees = raised
          continue
        }
        const asked = fresh ? leastPricePerGas(fresh) : least
        if (cap !== undefined && cap < asked) throw new FeesAboveCapError(call.description, asked, cap, outcome.detail)
        if (affordable < asked) throw new InsufficientFundsForGasError(address, balance, gas * asked + value)
        throw new ChainRpcError(`sending ${call.description}`, new Error(outcome.detail))
      }
      throw new ChainRpcError(`sending ${call.description}`, new Error(outcome.detail))
    }
  }

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

  async function send(call: ChainCall, options: SendOptions = {}): Promise<SentTransaction> {
    waiting++
    const submitted = tail.then(() => submit(call, options))
    // The next send waits for this broadcast, whatever its outcome.
    tail = submitted.then(
      () => undefined,
      () => undefined,
    )
    let t: Tracked
    try {
      t = await submitted
    } finally {
      waiting--
    }
    // Stopped while it was being sent: the journal has it for the next start, nobody follows it now.
    if (stopped) throw new TransactionQueueStoppedError(true)
    // Joined under its key after it was done (a restart between the two): its outcome at once.
    if (t.result) {
      if (t.result instanceof Error) throw t.result
      return t.result
    }
    const done = new Promise<SentTransaction>((resolve, reject) => t.waiters.push({ resolve, reject }))
    schedule(0)
    return bounded(t, done, options.timeoutMs ?? defaultTimeoutMs)
  }

  /** The send's answer, or ConfirmationTimeoutError after `ms`: the transaction goes on, only its caller stops waiting. */
  function bounded(t: Tracked, done: Promise<SentTransaction>, ms: number): Promise<SentTransaction> {
    if (!Number.isFinite(ms)) return done
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new ConfirmationTimeoutError(t.entry.mined?.blockNumber, lastHead ?? 0n, ms)), ms)
      done.then(
        (sent) => {
          clearTimeout(timer)
          resolve(sent)
        },
        (error: unknown) => {
          clearTimeout(timer)
          reject(error)
        },
      )
    })
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
      report(t, risk && { ...risk, nonce: e.nonce, description: e.call.description, deadline: e.deadline, head, hash: newest.hash })
    }
    if (t.repriceNow || bumpDue(newest.signedAtBlock, head, urgency, policy)) {
      const [market, balance] = await Promise.all([reads.fees(), reads.funds()])
      const fees = replacementFees(newest.fees, market, urgency, min(cap, affordablePricePerGas(balance, e.gas, e.call.value ?? 0n)))
      if (fees) {
        const attempt = await signAttempt(account, chain.chainId, e, fees, head)
        t.entry = e = { ...e, attempts: [...e.attempts, attempt] }
        await journal.put(e)
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

  const sections = new Map<string, Promise<unknown>>()
  function exclusive<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = sections.get(key) ?? Promise.resolve()
    const run = previous.then(task, task)
    const settled = run.then(
      () => undefined,
      () => undefined,
    )
    sections.set(key, settled)
    // Forget the key once the last task queued on it is done.
    void settled.then(() => {
      if (sections.get(key) === settled) sections.delete(key)
    })
    return run
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
    send,
    exclusive,
    start,
    outcome,
    async stop() {
      stopped = true
      clearTimeout(timer)
      wakeStart()
      // A send being signed and journaled finishes first: a queue made after this one over the same journal finds it.
      await tail
      await looking
      const error = new TransactionQueueStoppedError(true)
      for (const t of tracked.values()) for (const w of t.waiters.splice(0)) w.reject(error)
    },
    pending: () =>
      [...tracked.values()]
        .filter((t) => !t.result)
        .sort((a, b) => a.entry.nonce - b.entry.nonce)
        .map(({ entry }) => {
          const newest = entry.attempts.at(-1)!
          return {
            nonce: entry.nonce,
            status: entry.status,
            ...(entry.deadline !== undefined ? { deadline: entry.deadline } : {}),
            createdAt: entry.createdAt,
            description: entry.call.description,
            hash: newest.hash,
            attempts: entry.attempts.length,
            maxPricePerGas: maxPricePerGas(newest.fees),
          }
        }),
    get waiting() {
      return waiting
    },
  }
}

const min = (a: bigint | undefined, b: bigint): bigint => (a !== undefined && a < b ? a : b)

/** Maps a viem estimate failure to our typed errors. */
function sendError(call: ChainCall, address: Address, e: unknown): Error {
  if (e instanceof BaseError) {
    if (e.walk((c) => c instanceof InsufficientFundsError)) return new InsufficientFundsForGasError(address, undefined, undefined, e)
    const reverted = e.walk((c) => c instanceof ExecutionRevertedError)
    if (reverted) return new TransactionRevertedError(call.description, revertReason(e), undefined, e)
  }
  return new ChainRpcError(`sending ${call.description}`, e)
}

/**
 * The revert reason carried by a viem error: a require string, `panic 0x..`, a custom error's selector, or
 * the node's own text when it gave no revert data.
 */
export function revertReason(e: unknown): string | undefined {
  if (!(e instanceof BaseError)) return undefined
  const withData = e.walk((c) => typeof (c as { data?: unknown }).data === 'string') as { data?: Hex } | null
  const data = withData?.data
  if (data && data !== '0x') {
    try {
      const decoded = decodeErrorResult({ abi: [], data })
      if (decoded.errorName === 'Error') return decoded.args[0] as string
      if (decoded.errorName === 'Panic') return `panic 0x${(decoded.args[0] as bigint).toString(16)}`
    } catch {
      return `custom error ${data.slice(0, 10)}`
    }
  }
  const reverted = e.walk((c) => c instanceof ExecutionRevertedError) as BaseError | null
  const details = reverted?.details
  return details ? details.replace(/^execution reverted:?\s*/i, '') || undefined : undefined
}
