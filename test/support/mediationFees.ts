// Raiden's mediation fee model for schedules without an imbalance penalty (flat and proportional fees), exact in
// integers: what raiden/transfer/mediated_transfer/mediation_fee.py and mediator.py compute for such schedules with
// Fractions, rounded as Python rounds (half to even). The pathfinding tests and bench pass it to the search until
// src/protocol/fees/ gives the whole model. No vitest imports: the bench reuses it.
import type { FeeSchedule } from '../../src/protocol/messages/types.ts'
import type { MediationChannels, MediationFee } from '../../src/pathfinding/routeFees.ts'

const MILLION = 1_000_000n

/** n / d rounded half to even (Python's round of a Fraction); d > 0, n >= 0. */
export function roundHalfEven(n: bigint, d: bigint): bigint {
  const q = n / d
  const r2 = 2n * (n % d)
  if (r2 > d) return q + 1n
  if (r2 === d) return q % 2n === 0n ? q : q + 1n
  return q
}

/** raiden/utils/mediation_fees.py: a proportional fee per mediation (ppm) as the fee per channel that adds up to it. */
export function ppmFeePerChannel(perHop: bigint): bigint {
  return roundHalfEven(perHop * MILLION, perHop + 2n * MILLION)
}

/** A mediator's schedule for each of its channels, from its fees per mediation (Raiden's CLI: the flat fee halved). */
export function mediatorSchedule({ flat = 0n, proportional = 0n }: { flat?: bigint; proportional?: bigint }): FeeSchedule {
  return { cap_fees: true, flat: flat / 2n, proportional: ppmFeePerChannel(proportional), imbalance_penalty: null }
}

function flatAndProportional({ payer, payee }: MediationChannels) {
  if (payer.schedule.imbalance_penalty !== null || payee.schedule.imbalance_penalty !== null) throw new Error('this model has no imbalance penalty')
  return { flats: payer.schedule.flat + payee.schedule.flat, inPpm: payer.schedule.proportional, outPpm: payee.schedule.proportional }
}

/**
 * get_amount_with_fees for these schedules: the x the mediator must receive to forward `amountOut`, where
 * x = amountOut + flat_in + flat_out + in_ppm * x + out_ppm * amountOut, within what both channels can carry.
 */
export const flatAndProportionalFee: MediationFee = (channels, amountOut) => {
  const { payer, payee } = channels
  if (payee.balance === 0n || payer.receivable === 0n) return undefined
  const { flats, inPpm, outPpm } = flatAndProportional(channels)
  if (inPpm >= MILLION) return undefined
  const numerator = amountOut * (MILLION + outPpm) + flats * MILLION
  const denominator = MILLION - inPpm
  const most = payee.balance < payer.receivable ? payee.balance : payer.receivable
  if (numerator > most * denominator) return undefined
  const amountIn = roundHalfEven(numerator, denominator)
  return amountIn <= 0n ? undefined : amountIn - amountOut
}

/**
 * get_amount_without_fees for these schedules: what a Raiden mediator forwards on receiving `amountIn`, where
 * amountIn = y + flat_in + flat_out + in_ppm * amountIn + out_ppm * y, or undefined when it cannot.
 */
export function forwardedAmount(channels: MediationChannels, amountIn: bigint): bigint | undefined {
  const { payer, payee } = channels
  if (payee.balance === 0n || payer.receivable === 0n) return undefined
  const { flats, inPpm, outPpm } = flatAndProportional(channels)
  const numerator = amountIn * (MILLION - inPpm) - flats * MILLION
  if (numerator <= 0n) return undefined
  const denominator = MILLION + outPpm
  if (numerator > payee.balance * denominator) return undefined
  return roundHalfEven(numerator, denominator)
}
