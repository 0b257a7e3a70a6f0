import type { Fees } from './transactionJournal.ts'

/**
 * The fee policy of the account's transactions (docs/decisions/0054), pure: what to offer first, when and how much
 * to raise an offer that is not mined, and whether a transaction can still make its deadline. The transaction queue
 * reads the market and the clock; everything it decides about fees is decided here.
 */

/** What the chain asks now: the next block's base fee and a usual tip (EIP-1559), or a gas price (no base fee). */
export type FeeMarket = { baseFee: bigint; priorityFee: bigint } | { gasPrice: bigint }

export type BumpPolicy = {
  /** Blocks an offer may wait unmined before it is raised; 3 by default (Chainlink's threshold). */
  bumpAfterBlocks?: bigint
  /** Within this many blocks of its deadline a transaction is urgent: raised at every block, offered more; 10 by default. */
  urgentWithinBlocks?: bigint
}

/** A replacement must raise both fees by at least this much (12.5 %: geth asks 10 %, some nodes more). */
export const REPLACEMENT_BUMP_PERMILLE = 1125n

export const DEFAULT_BUMP_AFTER_BLOCKS = 3n
export const DEFAULT_URGENT_WITHIN_BLOCKS = 10n

export type Urgency = 'normal' | 'urgent'

/** How hard a transaction with `deadline` (or none) is pushed at `head`. */
export function urgencyAt(head: bigint, deadline: bigint | undefined, policy: BumpPolicy = {}): Urgency {
  if (deadline === undefined) return 'normal'
  return deadline - head <= (policy.urgentWithinBlocks ?? DEFAULT_URGENT_WITHIN_BLOCKS) ? 'urgent' : 'normal'
}

/**
 * The fees the market asks now, before any cap: the base fee doubled plus the tip (as ethers and MetaMask offer: it
 * stays above the base fee through six full blocks), or tripled plus twice the tip when urgent. Legacy: the gas
 * price, doubled when urgent. What is paid is the base fee plus the tip; the rest is only a ceiling.
 */
export function marketFees(market: FeeMarket, urgency: Urgency): Fees {
  if ('gasPrice' in market) return { gasPrice: urgency === 'urgent' ? market.gasPrice * 2n : market.gasPrice }
  const tip = urgency === 'urgent' ? market.priorityFee * 2n : market.priorityFee
  return { maxFeePerGas: market.baseFee * (urgency === 'urgent' ? 3n : 2n) + tip, maxPriorityFeePerGas: tip }
}

/** The least price per gas that gets a transaction into the next block: its base fee and the tip (legacy: the gas price). */
export function leastPricePerGas(market: FeeMarket): bigint {
  return 'gasPrice' in market ? market.gasPrice : market.baseFee + market.priorityFee
}

/**
 * The first offer: what the market asks, within `cap` (the operator's `--max-fee-per-gas`, or what the balance can pay
 * per gas, whichever is lower). It may fall below what the market asks: the queue then raises the risk.
 */
export function initialFees(market: FeeMarket, urgency: Urgency, cap?: bigint): Fees {
  const fees = marketFees(market, urgency)
  if (cap === undefined) return fees
  if ('gasPrice' in fees) return { gasPrice: min(fees.gasPrice, cap) }
  const fee = min(fees.maxFeePerGas, cap)
  return { maxFeePerGas: fee, maxPriorityFeePerGas: min(fees.maxPriorityFeePerGas, fee) }
}

/**
 * The offer that replaces `previous` (same nonce): at least 12.5 % more on every fee, and at least what the market
 * asks now, within `cap`; undefined when the cap leaves no room for a valid replacement (the previous offer then
 * stands, and is broadcast again). A previous offer of the other kind (the chain gained or lost its base fee) is
 * raised on its price per gas.
 */
export function replacementFees(previous: Fees, market: FeeMarket, urgency: Urgency, cap?: bigint): Fees | undefined {
  const fresh = marketFees(market, urgency)
  const freshFee = maxPricePerGas(fresh)
  if ('gasPrice' in previous) {
    const least = bumped(previous.gasPrice)
    if (cap !== undefined && least > cap) return undefined
    return { gasPrice: atMost(max(least, freshFee), cap) }
  }
  const leastFee = bumped(previous.maxFeePerGas)
  const leastTip = bumped(previous.maxPriorityFeePerGas)
  if (cap !== undefined && leastFee > cap) return undefined
  const freshTip = 'gasPrice' in fresh ? fresh.gasPrice : fresh.maxPriorityFeePerGas
  const fee = atMost(max(leastFee, freshFee), cap)
  const tip = min(max(leastTip, freshTip), fee)
  // The cap can leave the fee room but not the tip (a tip already near the fee): no valid replacement then.
  if (tip < leastTip) return undefined
  return { maxFeePerGas: fee, maxPriorityFeePerGas: tip }
}

/** Whether an offer signed at `signedAtBlock` is due to be raised at `head`: after `bumpAfterBlocks`, at every block when urgent. */
export function bumpDue(signedAtBlock: bigint, head: bigint, urgency: Urgency, policy: BumpPolicy = {}): boolean {
  const after = urgency === 'urgent' ? 1n : (policy.bumpAfterBlocks ?? DEFAULT_BUMP_AFTER_BLOCKS)
  return head - signedAtBlock >= after
}

/** The highest price per gas an offer may cost: what the balance must cover (with the value). */
export function maxPricePerGas(fees: Fees): bigint {
  return 'gasPrice' in fees ? fees.gasPrice : fees.maxFeePerGas
}

/** The most per gas a balance can offer for a transaction of `gas` and `value` (a node refuses one it cannot pay in full). */
export function affordablePricePerGas(balance: bigint, gas: bigint, value: bigint): bigint {
  return balance > value ? (balance - value) / gas : 0n
}

/** Why a transaction with a deadline may miss it, with what would help; see `deadlineRisk`. */
export type DeadlineRisk =
  /** The market asks more than the operator's cap allows: `needed` is the cap that would do. */
  | { reason: 'fee_cap'; needed: bigint }
  /** The balance cannot pay the gas at the least price that gets it mined: `needed` is the balance that would. */
  | { reason: 'balance'; needed: bigint }
  /** Not mined, with few blocks left, for no reason the node can see (a congested or censoring chain, a lagging endpoint). */
  | { reason: 'not_mined' }
  /** The deadline passed before it was mined. */
  | { reason: 'missed' }

/**
 * Whether an unmined transaction with a deadline is at risk of missing it, judged at `head`. Raised early (as soon as
 * the cap or the balance stands in the way of the next block, whatever the blocks left) so its owner has time to act;
 * `not_mined` only once it is urgent.
 */
export function deadlineRisk(p: {
  head: bigint
  deadline: bigint
  market: FeeMarket
  /** The operator's cap per gas, if any. */
  cap?: bigint
  gas: bigint
  value: bigint
  balance: bigint
  policy?: BumpPolicy
}): DeadlineRisk | undefined {
  const { head, deadline, market, cap, gas, value, balance, policy = {} } = p
  if (head > deadline) return { reason: 'missed' }
  const urgency = urgencyAt(head, deadline, policy)
  const least = leastPricePerGas(market)
  const asked = maxPricePerGas(marketFees(market, urgency))
  if (cap !== undefined && cap < least) return { reason: 'fee_cap', needed: asked }
  if (affordablePricePerGas(balance, gas, value) < least) return { reason: 'balance', needed: gas * atMost(asked, cap) + value }
  if (urgency === 'urgent') return { reason: 'not_mined' }
  return undefined
}

/** 12.5 % more, rounded up: a replacement rounded down could fall short of what a node requires. */
function bumped(value: bigint): bigint {
  const raised = (value * REPLACEMENT_BUMP_PERMILLE + 999n) / 1000n
  // 12.5 % of a tiny value rounds to nothing: a replacement must still be higher.
  return raised > value ? raised : value + 1n
}

const max = (a: bigint, b: bigint) => (a > b ? a : b)
const min = (a: bigint, b: bigint) => (a < b ? a : b)
/** `value`, or `cap` when there is one below it: the lower of two caps, one of which may be absent. */
export const atMost = (value: bigint, cap: bigint | undefined): bigint => (cap !== undefined && value > cap ? cap : value)
