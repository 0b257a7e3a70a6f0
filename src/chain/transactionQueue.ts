import { waitForReceipt } from './receipt.ts'
import {
  BaseError,
  decodeErrorResult,
  Eip1559FeesNotSupportedError,
  ExecutionRevertedError,
  InsufficientFundsError,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem'
import type { ChainClient } from './chainClient.ts'
import type { TransactionJournal } from './transactionJournal.ts'
import { ChainRpcError, InsufficientFundsForGasError, TransactionRevertedError } from './errors.ts'

/**
 * One contract call to send: already ABI-encoded, with a description for errors and logs. Without `to` it creates a
 * contract (`data` is the creation code with its arguments), and the receipt's `contractAddress` is the new address.
 */
export type ChainCall = {
  to?: Address
  data: Hex
  value?: bigint
  /** e.g. `TokenNetwork.closeChannel(7)`: names the call in errors. */
  description: string
}

export type SendOptions = {
  /** Called once the transaction is broadcast, before it is mined: persist the hash and nonce here. */
  onSubmitted?: (submitted: { hash: Hex; nonce: number }) => void | Promise<void>
}

export type SentTransaction = { hash: Hex; nonce: number; receipt: TransactionReceipt }

export type CreateTransactionQueueParameters = {
  /** Percent added to the gas estimate; 20 by default. */
  gasMargin?: number
  /** Milliseconds to wait for a receipt before giving up (the transaction may still be mined); 5 minutes by default. */
  receiptTimeout?: number
  /** Where every nonce used is written before its transaction is broadcast (not read or written by this queue yet). */
  journal?: TransactionJournal
  /** The operator's cap on the fee per gas, in wei (not applied by this queue yet). */
  maxFeePerGas?: bigint
  /** Blocks on top of a transaction's block before it counts as done (not awaited by this queue yet). */
  confirmations?: bigint
}

export type TransactionQueue = {
  /**
   * Estimates, checks the ETH balance, signs with the next nonce, broadcasts and waits for the receipt.
   * Sends are serialized in call order (so nonces follow the order of calls); receipts are awaited in parallel.
   * Throws TransactionRevertedError, InsufficientFundsForGasError or ChainRpcError.
   */
  send(call: ChainCall, options?: SendOptions): Promise<SentTransaction>
  /**
   * Runs `task` once no other task with the same key runs: for read-then-send sequences that must not
   * interleave, such as allowance check + approve + deposit on one token and spender.
   */
  exclusive<T>(key: string, task: () => Promise<T>): Promise<T>
  /** Calls whose transaction is not broadcast yet. */
  readonly waiting: number
}

export type SendTransactionErrorType = TransactionRevertedError | InsufficientFundsForGasError | ChainRpcError

/**
 * The one transaction queue of an account. The nonce is kept here, starting from the pending transaction
 * count, so concurrent sends never race for a nonce; after a failed broadcast it is read again from the node.
 */
export function createTransactionQueue(
  chain: ChainClient,
  { gasMargin = 20, receiptTimeout = 300_000 }: CreateTransactionQueueParameters = {},
): TransactionQueue {
  const { publicClient, walletClient, address } = chain
  let nonce: number | undefined
  let tail: Promise<unknown> = Promise.resolve()
  let waiting = 0

  async function submit(request: ChainCall): Promise<{ hash: Hex; nonce: number }> {
    let gasEstimate: bigint
    try {
      // No fees in the estimate: an account without ETH still gets one, and then the clear error below.
      gasEstimate = await publicClient.estimateGas({ account: address, to: request.to, data: request.data, value: request.value })
    } catch (e) {
      throw sendError(request, address, e)
    }
    const gas = (gasEstimate * BigInt(100 + gasMargin)) / 100n
    let fees: Fees
    let balance: bigint
    try {
      ;[fees, balance] = await Promise.all([currentFees(), publicClient.getBalance({ address })])
    } catch (e) {
      throw new ChainRpcError('eth_gasPrice/eth_getBalance', e)
    }
    const required = gas * ('gasPrice' in fees ? fees.gasPrice : fees.maxFeePerGas) + (request.value ?? 0n)
    if (balance < required) throw new InsufficientFundsForGasError(address, balance, required)

    if (nonce === undefined) {
      try {
        nonce = await publicClient.getTransactionCount({ address, blockTag: 'pending' })
      } catch (e) {
        throw new ChainRpcError('eth_getTransactionCount', e)
      }
    }
    const used = nonce
    try {
      const hash = await walletClient.sendTransaction({ to: request.to, data: request.data, value: request.value, gas, nonce: used, ...fees })
      nonce = used + 1
      return { hash, nonce: used }
    } catch (e) {
      // Whether the node took the nonce is unknown: ask it again before the next send.
      nonce = undefined
      throw sendError(request, address, e)
    }
  }

  /** EIP-1559 fees, or a legacy gas price on a chain whose blocks have no base fee. */
  async function currentFees(): Promise<Fees> {
    try {
      return await publicClient.estimateFeesPerGas()
    } catch (e) {
      if (!(e instanceof BaseError && e.walk((c) => c instanceof Eip1559FeesNotSupportedError))) throw e
      return { gasPrice: await publicClient.getGasPrice() }
    }
  }

  async function send(request: ChainCall, options: SendOptions = {}): Promise<SentTransaction> {
    waiting++
    const submitted = tail.then(() => submit(request))
    // The next send waits for this broadcast, whatever its outcome.
    tail = submitted.then(
      () => undefined,
      () => undefined,
    )
    let sent: { hash: Hex; nonce: number }
    try {
      sent = await submitted
    } finally {
      waiting--
    }
    await options.onSubmitted?.(sent)

    let receipt: TransactionReceipt
    try {
      receipt = await waitForReceipt(publicClient, sent.hash, { timeout: receiptTimeout })
    } catch (e) {
      throw new ChainRpcError('eth_getTransactionReceipt', e)
    }
    if (receipt.status !== 'success') throw new TransactionRevertedError(request.description, await revertReasonAt(request, receipt), sent.hash)
    return { ...sent, receipt }
  }

  /** Why a mined transaction reverted: the same call replayed against the state of its block. */
  async function revertReasonAt(request: ChainCall, receipt: TransactionReceipt): Promise<string | undefined> {
    try {
      await publicClient.call({ account: address, to: request.to, data: request.data, value: request.value, blockNumber: receipt.blockNumber })
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

  return {
    send,
    exclusive,
    get waiting() {
      return waiting
    },
  }
}

type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint }

/** Maps a viem estimate/send failure to our typed errors. */
function sendError(request: ChainCall, address: Address, e: unknown): Error {
  if (e instanceof BaseError) {
    if (e.walk((c) => c instanceof InsufficientFundsError)) return new InsufficientFundsForGasError(address, undefined, undefined, e)
    const reverted = e.walk((c) => c instanceof ExecutionRevertedError)
    if (reverted) return new TransactionRevertedError(request.description, revertReason(e), undefined, e)
  }
  return new ChainRpcError(`sending ${request.description}`, e)
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
