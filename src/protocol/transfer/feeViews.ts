import { balance, capacity } from '../channel/amounts.ts'
import type { MediationChannels } from '../fees/mediationFee.ts'
import { channelFeeSchedule, noMediationFees } from '../fees/schedule.ts'
import type { Channel, NodeState } from '../state/types.ts'

/**
 * Our two channels of a mediation as the fee model sees them (docs/decisions/0069): our balance in each (Raiden's
 * get_balance: pending locks not subtracted), what the payer can still send us (Raiden's receivable: both deposits
 * less our balance) and our schedule for each, from the fees the state holds and the channel's capacity.
 */
export function mediationChannels(state: NodeState, payer: Channel, payee: Channel): MediationChannels {
  const fees = state.mediationFees ?? noMediationFees
  const ourBalanceIn = balance(payer.our, payer.partnerEnd)
  return {
    payer: {
      balance: ourBalanceIn,
      receivable: payer.our.deposit + payer.partnerEnd.deposit - ourBalanceIn,
      schedule: channelFeeSchedule(fees, payer.token, capacity(payer.our, payer.partnerEnd)),
    },
    payee: { balance: balance(payee.our, payee.partnerEnd), schedule: channelFeeSchedule(fees, payee.token, capacity(payee.our, payee.partnerEnd)) },
  }
}
