import { withTimeout } from '../waits.ts'
import { SerialByKey } from '../serialByKey.ts'
import { BaseError, ExecutionRevertedError, InsufficientFundsError, type Address, type Hex } from 'viem'
import { broadcast, signAttempt } from './broadcast.ts'
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
  atMost,
  initialFees,
  leastPricePerGas,
  maxPricePerGas,
  replacementFees,
  urgencyAt,
  type BumpPolicy,
  type FeeMarket,
} from './fees.ts'
import { memoryJournal, type JournalEntry, type TransactionJournal } from './transactionJournal.ts'
import { createTransactionTracker, type OnSubmitted, type SentTransaction, type Tracked } from './transactionTracker.ts'
import { revertReason } from './revertReason.ts'
import type { TransactionRisk } from './transactionRisk.ts'
import { hasCode } from '../errors.ts'

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
  onSubmitted?: OnSubmitted
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

export type { SentTransaction } from './transactionTracker.ts'

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
  /** Replacements at a higher fee signed since the queue started (one more version of a nonce each). */
  readonly replaced: number
}

export type SendTransactionErrorType =
  | TransactionRevertedError
  | InsufficientFundsForGasError
  | FeesAboveCapError
  | ChainRpcError
  | NonceTakenError
  | TransactionQueueStoppedError

/**
 * The one transaction queue of an account (docs/decisions/0010, 0054). It keeps the nonce, and every transaction
 * it signs is in its journal before it is broadcast: after a crash it finds each nonce it used and the bytes it
 * signed, and never leaves a gap nor uses one nonce for two calls. Once sent, the tracker (transactionTracker.ts)
 * follows each until it is mined and confirmed: raised when not mined, sent again when dropped or reorganised away.
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
  // What follows each transaction once it is sent.
  const tracker = createTransactionTracker({ chain, journal, cap, keepBlocks, confirmations, policy, pollingInterval, onRisk, onError, now })
  const { tracked, schedule, sent } = tracker
  let nextNonce = 0
  let loading: Promise<void> | undefined
  let tail: Promise<unknown> = Promise.resolve()
  let waiting = 0
  let stopped = false
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
        throw hasCode(e, 'CHAIN_RPC') ? e : new ChainRpcError('eth_getTransactionCount', e)
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
      throw hasCode(e, 'CHAIN_RPC') ? e : new ChainRpcError('eth_getBalance/eth_blockNumber', e)
    }
    const least = leastPricePerGas(market)
    if (cap !== undefined && cap < least) throw new FeesAboveCapError(call.description, least, cap)
    const affordable = affordablePricePerGas(balance, gas, value)
    if (affordable < least) throw new InsufficientFundsForGasError(address, balance, gas * least + value)
    const urgency = urgencyAt(head, options.deadline, policy)
    let fees = initialFees(market, urgency, atMost(affordable, cap))

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
        const raised = fresh && replacementFees(fees, fresh, urgency, atMost(affordable, cap))
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
    return withTimeout(done, ms, () => new ConfirmationTimeoutError(t.entry.mined?.blockNumber, tracker.lastHead ?? 0n, ms))
  }

  /** One section at a time per key (`exclusive`). */
  const sections = new SerialByKey()
  const exclusive = <T>(key: string, task: () => Promise<T>): Promise<T> => sections.run(key, task)

  return {
    send,
    exclusive,
    start,
    outcome: tracker.outcome,
    async stop() {
      stopped = true
      wakeStart()
      // A send being signed and journaled finishes first: a queue made after this one over the same journal finds it.
      await tail
      await tracker.stop()
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
    get replaced() {
      return tracker.replaced
    },
  }
}

/** Maps a viem estimate failure to our typed errors. */
function sendError(call: ChainCall, address: Address, e: unknown): Error {
  if (e instanceof BaseError) {
    if (e.walk((c) => c instanceof InsufficientFundsError)) return new InsufficientFundsForGasError(address, undefined, undefined, e)
    const reverted = e.walk((c) => c instanceof ExecutionRevertedError)
    if (reverted) return new TransactionRevertedError(call.description, revertReason(e), undefined, e)
  }
  return new ChainRpcError(`sending ${call.description}`, e)
}
