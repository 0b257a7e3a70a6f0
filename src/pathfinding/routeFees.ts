import type { FeeSchedule } from '../protocol/messages/types.ts'

/**
 * A mediator's two channels as Raiden's fee model takes them (raiden/tests/utils/mediation_fees.py
 * `get_amount_with_fees`), each from the mediator's side: the payer's channel it is paid through (what it holds there,
 * what the payer can still send it, its schedule there) and the payee's channel it pays into (what it holds there, its
 * schedule there). The same shape as the protocol's fee model takes (src/protocol/fees/).
 */
export type MediationChannels = {
  payer: { balance: bigint; receivable: bigint; schedule: FeeSchedule }
  payee: { balance: bigint; schedule: FeeSchedule }
}

/**
 * The fee a mediator takes to forward `amountOut` to its payee, having received it with the fee from its payer: the
 * amount it must receive less `amountOut` (negative when its imbalance fee pays the sender), or undefined when no
 * amount works (too little capacity, an amount that does not cover the fee, a penalty curve that does not reach).
 * The service takes it as a parameter: the model is the protocol's.
 */
export type MediationFee = (channels: MediationChannels, amountOut: bigint) => bigint | undefined

/**
 * The fee each mediator of a route takes, worked out backwards from the target as raiden-services does: the last
 * mediator must forward `value`, the one before it `value` plus that fee, and so on. In route order (first mediator
 * first); undefined when a mediator's fee cannot be computed.
 */
export function mediatorFees(mediators: readonly MediationChannels[], value: bigint, mediationFee: MediationFee): bigint[] | undefined {
  const fees: bigint[] = new Array<bigint>(mediators.length)
  let amount = value
  for (let i = mediators.length - 1; i >= 0; i--) {
    const fee = mediationFee(mediators[i]!, amount)
    if (fee === undefined || amount + fee <= 0n) return undefined
    fees[i] = fee
    amount += fee
  }
  return fees
}
