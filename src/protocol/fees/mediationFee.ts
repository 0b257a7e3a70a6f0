import type { FeeSchedule } from '../messages/types.ts'
import { interpolation, interpolationOfPoints, valueAt, type Interpolation } from './interpolate.ts'
import { absolute, add, compare, div, eq, gt, lt, max, min, mul, neg, rational, roundHalfEven, sign, sub, ZERO, type Rational } from './rational.ts'

/**
 * A mediator's two channels as its fee sees them: the one the transfer comes in by (from the payer) and the one it
 * goes out by (to the payee), each from the mediator's side. Plain data, so that a mediator (from its own channels)
 * and a pathfinding service (from announced capacities and fee schedules) compute the same fee:
 *
 * - `payer.balance`: what the mediator holds in the payer's channel (Raiden's balance: its deposit less its withdrawals
 *   less what it sent plus what it received; pending locks are not subtracted). A pathfinding service gives the
 *   mediator's announced capacity towards the payer (raiden-services' `view_in.capacity_partner`).
 * - `payer.receivable`: what the payer can still send the mediator (Raiden's `receivable`: both deposits less the
 *   mediator's balance; raiden-services' `view_in.capacity`).
 * - `payer.schedule`: the mediator's schedule for that channel (`view_in.fee_schedule_receiver`).
 * - `payee.balance`: what the mediator holds in the payee's channel, what it can send on (`view_out.capacity`).
 * - `payee.schedule`: the mediator's schedule for that channel (`view_out.fee_schedule_sender`).
 *
 * Both schedules are the same mediator's, so they share `cap_fees`; the payer side's is the one applied (Raiden
 * asserts they are equal).
 */
export type MediationChannels = {
  payer: { balance: bigint; receivable: bigint; schedule: FeeSchedule }
  payee: { balance: bigint; schedule: FeeSchedule }
}

const PPM = 1_000_000n

/** A schedule's penalty function, or a flat zero over [0, top] when it has none; undefined for a malformed one. */
function penaltyOf(schedule: FeeSchedule, top: bigint): Interpolation | undefined {
  if (schedule.imbalance_penalty?.length) return interpolationOfPoints(schedule.imbalance_penalty)
  return interpolation([ZERO, rational(top)], [ZERO, ZERO])
}

/**
 * One channel's fee for moving `amount` (positive: coming in; negative: going out) while the mediator holds
 * `balance` there: flat + proportional * |amount| + penalty(balance + amount) - penalty(balance). Undefined when the
 * balance after it falls outside the penalty's range (Raiden's UndefinedMediationFee).
 */
function channelFee(schedule: FeeSchedule, penalty: Interpolation, balance: bigint, amount: Rational): Rational | undefined {
  const b = rational(balance)
  const after = valueAt(penalty, add(b, amount))
  const before = valueAt(penalty, b)
  if (!after || !before) return undefined
  return add(add(rational(schedule.flat), mul(rational(schedule.proportional, PPM), absolute(amount))), sub(after, before))
}

/**
 * Raiden's `_cap_fees`: the points where the fee crosses zero are added before the negative fees become zero, so that
 * the capped function is not drawn straight across them. As in Raiden, only as many segments are looked at as there
 * were points less one, counting the points added, so a crossing in the last segments may be left out.
 */
function capFees(xs: Rational[], ys: Rational[]): { xs: Rational[]; ys: Rational[] } {
  const x = [...xs]
  const y = [...ys]
  const segments = x.length - 1
  for (let i = 0; i < segments; i++) {
    const y1 = y[i]!
    const y2 = y[i + 1]!
    if (sign(y1) * sign(y2) === -1) {
      const x1 = x[i]!
      const x2 = x[i + 1]!
      const crossing = add(x1, mul(div(absolute(y1), absolute(sub(y2, y1))), sub(x2, x1)))
      // bisect_right: after any equal x.
      let at = 0
      while (at < x.length && compare(x[at]!, crossing) <= 0) at++
      x.splice(at, 0, crossing)
      y.splice(at, 0, ZERO)
    }
  }
  return { xs: x, ys: y.map((v) => max(v, ZERO)) }
}

/**
 * The mediation's total fee as a function of the amount that is not fixed (Raiden's `_mediation_fee_func`): with
 * the incoming amount fixed, of the outgoing one (`x` in [0, payee balance]); with the outgoing amount fixed, of the
 * incoming one (`x` in [0, receivable]). Undefined where Raiden raises UndefinedMediationFee: a channel that cannot
 * move a single token, or an amount that takes a balance out of its penalty's range.
 */
export function mediationFeeFunction(channels: MediationChannels, fixed: { amountIn: bigint } | { amountOut: bigint }): Interpolation | undefined {
  const { payer, payee } = channels
  if (payee.balance === 0n || payer.receivable === 0n) return undefined
  const penaltyIn = penaltyOf(payer.schedule, payer.balance + payer.receivable)
  const penaltyOut = penaltyOf(payee.schedule, payee.balance)
  if (!penaltyIn || !penaltyOut) return undefined
  // The x values where either penalty bends, moved to the axis of the amount not fixed, within what can move.
  const top = rational('amountIn' in fixed ? payee.balance : payer.receivable)
  const balanceIn = rational(payer.balance)
  const balanceOut = rational(payee.balance)
  const candidates = [...penaltyIn.xs.map((x) => sub(x, balanceIn)), ...penaltyOut.xs.map((x) => sub(balanceOut, x))]
  const xs = candidates
    .map((x) => max(min(min(x, balanceOut), top), ZERO))
    .sort(compare)
    .filter((x, i, all) => i === 0 || !eq(x, all[i - 1]!))
  const ys: Rational[] = []
  for (const x of xs) {
    const feeIn = channelFee(payer.schedule, penaltyIn, payer.balance, 'amountIn' in fixed ? rational(fixed.amountIn) : x)
    const feeOut = channelFee(payee.schedule, penaltyOut, payee.balance, neg('amountOut' in fixed ? rational(fixed.amountOut) : x))
    if (!feeIn || !feeOut) return undefined
    ys.push(add(feeIn, feeOut))
  }
  const capped = payer.schedule.cap_fees ? capFees(xs, ys) : { xs, ys }
  return interpolation(capped.xs, capped.ys)
}

/**
 * Where the fee function meets a straight line given at its points (Raiden's find_intersection): walks the points
 * until the fee crosses the line, then solves within that segment. Undefined when they never meet within the
 * function's range (not enough capacity).
 */
function intersection(fee: Interpolation, line: (i: number) => Rational): Rational | undefined {
  const below = lt(fee.ys[0]!, line(0))
  let i = 0
  while (below ? lt(fee.ys[i]!, line(i)) : gt(fee.ys[i]!, line(i))) {
    i++
    if (i === fee.xs.length) return undefined
  }
  // Met at the first point: Raiden's formula reaches back to the last point there and gives this x (or divides by
  // zero when the line meets the last point too).
  if (i === 0) return fee.xs[0]!
  const [x1, x2] = [fee.xs[i - 1]!, fee.xs[i]!]
  const [yf1, yf2] = [fee.ys[i - 1]!, fee.ys[i]!]
  const [yl1, yl2] = [line(i - 1), line(i)]
  return add(div(mul(sub(yl1, yf1), sub(x2, x1)), sub(sub(yf2, yf1), sub(yl2, yl1))), x1)
}

/**
 * A positive amount rounded half to even, or undefined (Raiden: the fees are not covered, or no capacity). One that
 * rounds to 0 is undefined too: Raiden's mediator forwards nothing then (`if not amount_after_fees`).
 */
function positiveAmount(x: Rational | undefined): bigint | undefined {
  const rounded = x && gt(x, ZERO) ? roundHalfEven(x) : 0n
  return rounded > 0n ? rounded : undefined
}

/**
 * What a mediator forwards to its payee when `amountWithFees` came in from its payer (Raiden's
 * get_amount_without_fees): the x at which x + fee(x) = amountWithFees. Undefined when no amount can go out: the
 * fees take it all, the payee's channel lacks the capacity, or a balance would leave its penalty's range.
 */
export function amountWithoutFees(amountWithFees: bigint, channels: MediationChannels): bigint | undefined {
  const fee = mediationFeeFunction(channels, { amountIn: amountWithFees })
  if (!fee) return undefined
  const amountIn = rational(amountWithFees)
  return positiveAmount(intersection(fee, (i) => sub(amountIn, fee.xs[i]!)))
}

/**
 * What must come in to a mediator for `amountWithoutFees` to go out to its payee (Raiden's get_amount_with_fees, the
 * pathfinding service's step backwards from the target): the x at which x - fee(x) = amountWithoutFees. Undefined as
 * for amountWithoutFees.
 */
export function amountWithFees(amountWithoutFees: bigint, channels: MediationChannels): bigint | undefined {
  const fee = mediationFeeFunction(channels, { amountOut: amountWithoutFees })
  if (!fee) return undefined
  const amountOut = rational(amountWithoutFees)
  return positiveAmount(intersection(fee, (i) => sub(fee.xs[i]!, amountOut)))
}

/**
 * What the first mediator of a route must be sent for `amountAtTarget` to reach the target, and each mediator's fee
 * in route order (Raiden's get_initial_amount_for_amount_after_fees): from the target backwards, one mediator at a
 * time. `mediations` lists each mediator's channels in route order; the hop into the target takes no fee. Undefined
 * when a mediator cannot carry it.
 */
export function routeAmountWithFees(amountAtTarget: bigint, mediations: readonly MediationChannels[]): { amount: bigint; fees: bigint[] } | undefined {
  let total = amountAtTarget
  const fees: bigint[] = []
  for (let i = mediations.length - 1; i >= 0; i--) {
    const before = amountWithFees(total, mediations[i]!)
    if (before === undefined) return undefined
    fees.unshift(before - total)
    total = before
  }
  return { amount: total, fees }
}
