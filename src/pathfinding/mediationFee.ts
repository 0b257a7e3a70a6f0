import type { FeeSchedule } from '../protocol/messages/types.ts'
import type { MediationChannels, MediationFee } from './routeFees.ts'

/**
 * The fee model the service estimates routes with. Raiden's model (src/protocol/fees/, `amountWithFees`) is not on main
 * yet; until it is, the service estimates only mediations that charge nothing: a mediator whose two schedules are all
 * zero takes no fee whatever it forwards (the model's answer for them), and a route through a mediator that charges
 * anything is left out, as any route whose fee cannot be computed. Once the model is there this becomes
 * `(channels, out) => { const x = amountWithFees(out, channels); return x === undefined ? undefined : x - out }`.
 */
export const serviceMediationFee: MediationFee = (channels: MediationChannels) =>
  chargesNothing(channels.payer.schedule) && chargesNothing(channels.payee.schedule) ? 0n : undefined

function chargesNothing(schedule: FeeSchedule): boolean {
  return schedule.flat === 0n && schedule.proportional === 0n && (schedule.imbalance_penalty === null || schedule.imbalance_penalty.every(([, y]) => y === 0n))
}
