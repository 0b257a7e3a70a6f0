import {
  BaseError,
  FeeCapTooLowError,
  InsufficientFundsError,
  IntrinsicGasTooLowError,
  keccak256,
  NonceTooLowError,
  TipAboveFeeCapError,
  type Hex,
  type PrivateKeyAccount,
  type PublicClient,
} from 'viem'
import { getNodeError } from 'viem/utils'
import { saysAlreadyKnown } from './rpcFailure.ts'
import type { Fees, JournalAttempt, JournalEntry } from './transactionJournal.ts'

/** Signs the entry's call at `nonce` with `fees`, offline: what is journaled, then broadcast (and broadcast again). */
export async function signAttempt(
  account: PrivateKeyAccount,
  chainId: number,
  entry: Pick<JournalEntry, 'nonce' | 'call' | 'gas'>,
  fees: Fees,
  signedAtBlock: bigint,
): Promise<JournalAttempt> {
  const { to, data, value } = entry.call
  const common = { chainId, nonce: entry.nonce, gas: entry.gas, data, ...(to ? { to } : {}), ...(value ? { value } : {}) }
  const raw =
    'gasPrice' in fees
      ? await account.signTransaction({ ...common, type: 'legacy', gasPrice: fees.gasPrice })
      : await account.signTransaction({ ...common, type: 'eip1559', maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas })
  return { hash: keccak256(raw), raw, fees, signedAtBlock }
}

/**
 * What an endpoint made of a raw transaction, as far as the transaction queue must tell:
 * - `accepted`: it holds it now (taken, or already known);
 * - `nonceUsed`: its nonce is already mined (by one of our attempts, or by a transaction we never signed);
 * - `feeTooLow`: the fee cap is below the next block's base fee, or the tip above the cap; a replacement below what
 *   the pool holds: priced again;
 * - `noFunds`: the balance cannot pay gas × fee cap + value;
 * - `refused`: anything else the node refused for good (intrinsic gas too low, a malformed transaction);
 * - `unknown`: no answer (an endpoint down, a timeout): it may or may not hold it. Broadcast again later.
 */
export type BroadcastOutcome =
  | { type: 'accepted' }
  | { type: 'nonceUsed' }
  | { type: 'feeTooLow'; detail: string }
  | { type: 'noFunds'; detail: string }
  | { type: 'refused'; detail: string }
  | { type: 'unknown'; error: unknown }

/** eth_sendRawTransaction of `raw`, its outcome told apart. Never throws. */
export async function broadcast(client: Pick<PublicClient, 'request'>, raw: Hex): Promise<BroadcastOutcome> {
  try {
    await client.request({ method: 'eth_sendRawTransaction', params: [raw] }, { retryCount: 0 })
    return { type: 'accepted' }
  } catch (error) {
    return outcomeOf(error)
  }
}

/** A node's message viem has no class for. */
const UNDERPRICED = /underpriced|replacement fee too low|fee too low to replace/i

function outcomeOf(error: unknown): BroadcastOutcome {
  const text = describe(error)
  if (saysAlreadyKnown(text)) return { type: 'accepted' }
  if (!(error instanceof BaseError)) return { type: 'unknown', error }
  // An HTTP failure or a timeout carries no answer of the node's: it may hold the transaction.
  const node = getNodeError(error, {})
  if (node instanceof NonceTooLowError) return { type: 'nonceUsed' }
  if (node instanceof FeeCapTooLowError || node instanceof TipAboveFeeCapError || UNDERPRICED.test(text)) return { type: 'feeTooLow', detail: text }
  if (node instanceof InsufficientFundsError) return { type: 'noFunds', detail: text }
  if (node instanceof IntrinsicGasTooLowError) return { type: 'refused', detail: text }
  return { type: 'unknown', error }
}

function describe(error: unknown): string {
  if (error instanceof BaseError) return [error.details, error.shortMessage, error.message].filter(Boolean).join(' ')
  return error instanceof Error ? error.message : String(error)
}
