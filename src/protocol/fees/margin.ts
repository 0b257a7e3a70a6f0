import { ceilFloat } from './pythonFloat.ts'

/** The share of the estimated fee added as a margin (Raiden's DEFAULT_MEDIATION_FEE_MARGIN). */
export const DEFAULT_MEDIATION_FEE_MARGIN = 0.03
/** The share of the amount added as a margin (Raiden's PAYMENT_AMOUNT_BASED_FEE_MARGIN). */
export const PAYMENT_AMOUNT_BASED_FEE_MARGIN = 0.0005

/**
 * What an initiator adds to an estimated fee against the fees moving before its transfer passes (channels are used
 * by other payments meanwhile, and each mediator's imbalance fee moves with them): 3 % of the fee plus 0.05 % of the
 * amount, rounded up; nothing when the estimate is 0, taken as no fees on the route (Raiden's calculate_fee_margin,
 * in the doubles Raiden computes it with).
 */
export function feeMargin(amount: bigint, estimatedFee: bigint): bigint {
  if (estimatedFee === 0n) return 0n
  const fee = Number(estimatedFee < 0n ? -estimatedFee : estimatedFee)
  return ceilFloat(fee * DEFAULT_MEDIATION_FEE_MARGIN + Number(amount) * PAYMENT_AMOUNT_BASED_FEE_MARGIN)
}

/** The amount an initiator locks: the amount, the estimated fee and its margin (Raiden's calculate_safe_amount_with_fee). */
export function safeAmountWithFee(amount: bigint, estimatedFee: bigint): bigint {
  return amount + estimatedFee + feeMargin(amount, estimatedFee)
}
