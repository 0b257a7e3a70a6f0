// Mediation fees as Raiden computes them (docs/decisions/0069): a mediator's schedules, the fee of one mediation both
// ways (what goes out for what came in, what must come in for what goes out), a route's fees from the target back,
// and the initiator's margin. Pure: no clock, no I/O.
export { DEFAULT_MEDIATION_FEE_MARGIN, PAYMENT_AMOUNT_BASED_FEE_MARGIN, feeMargin, safeAmountWithFee } from './margin.ts'
export { amountWithFees, amountWithoutFees, routeAmountWithFees, type MediationChannels } from './mediationFee.ts'
export {
  MAX_IMBALANCE_FEE_PPM,
  MAX_PROPORTIONAL_FEE_PPM,
  NUM_DISCRETISATION_POINTS,
  calculateImbalanceFees,
  channelFeeSchedule,
  linspace,
  noMediationFees,
  ppmFeePerChannel,
  sameMediationFees,
  type FeeSchedule,
  type MediationFees,
  type TokenFees,
} from './schedule.ts'
