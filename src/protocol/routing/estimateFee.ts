import type { Address } from 'viem'
import { balance, capacity } from '../channel/amounts.ts'
import { routeAmountWithFees, type MediationChannels } from '../fees/mediationFee.ts'
import { channelFeeSchedule, noMediationFees, type MediationFees } from '../fees/schedule.ts'
import { channelWith, sameAddress } from '../state/access.ts'
import type { GraphChannel, NodeState } from '../state/types.ts'

/** One participant's side of a channel as the chain shows it: what it put in less what it took out. */
type Side = { balance: bigint; partnerDeposit: bigint; ownDeposit: bigint; capacity: bigint }

function graphSide(c: GraphChannel, who: Address): Side {
  const first = sameAddress(c.participant1, who)
  const [own, other] = first ? [c.deposit1 - c.withdrawn1, c.deposit2 - c.withdrawn2] : [c.deposit2 - c.withdrawn2, c.deposit1 - c.withdrawn1]
  return { balance: own, ownDeposit: first ? c.deposit1 : c.deposit2, partnerDeposit: first ? c.deposit2 : c.deposit1, capacity: own + other }
}

/** `who`'s side of its open channel with `partner`: exactly for a channel of ours, else as the chain shows it. */
function sideOf(state: NodeState, tokenNetwork: Address, who: Address, partner: Address): Side | undefined {
  if (sameAddress(partner, state.address)) {
    const ours = channelWith(state, tokenNetwork, who)
    if (ours?.state !== 'opened') return undefined
    return {
      balance: balance(ours.partnerEnd, ours.our),
      ownDeposit: ours.partnerEnd.deposit,
      partnerDeposit: ours.our.deposit,
      capacity: capacity(ours.our, ours.partnerEnd),
    }
  }
  const graph = state.tokenNetworks[tokenNetwork]?.graph ?? {}
  const c = Object.values(graph).find(
    (g) =>
      g.open &&
      ((sameAddress(g.participant1, who) && sameAddress(g.participant2, partner)) ||
        (sameAddress(g.participant2, who) && sameAddress(g.participant1, partner))),
  )
  return c && graphSide(c, who)
}

/**
 * What a route found over the node's own graph may cost in mediation fees, as far as the node can tell without a
 * pathfinding service (docs/decisions/0069): each mediator is taken to charge what this node charges for the token
 * (its own settings, `fees`), over its channels as the chain shows them (deposits less withdrawals: the balances
 * moved off-chain are private; our own channel exactly), from the target back as a pathfinding service computes it.
 * 0 for a direct route, when this node charges nothing for the token, and when a mediator could not carry it at
 * those fees (the guess is then no better than none).
 */
export function estimateRouteFee(
  state: NodeState,
  { tokenNetwork, route, amount }: { tokenNetwork: Address; route: readonly Address[]; amount: bigint },
): bigint {
  const fees: MediationFees = state.mediationFees ?? noMediationFees
  const token = state.tokenNetworks[tokenNetwork]?.token
  if (route.length < 2 || !token || !fees.tokens[token.toLowerCase()]) return 0n
  const mediations: MediationChannels[] = []
  for (let i = 0; i + 1 < route.length; i++) {
    const mediator = route[i]!
    const payer = sideOf(state, tokenNetwork, mediator, i === 0 ? state.address : route[i - 1]!)
    const payee = sideOf(state, tokenNetwork, mediator, route[i + 1]!)
    if (!payer || !payee) return 0n
    mediations.push({
      payer: {
        balance: payer.balance,
        receivable: payer.ownDeposit + payer.partnerDeposit - payer.balance,
        schedule: channelFeeSchedule(fees, token, payer.capacity),
      },
      payee: { balance: payee.balance, schedule: channelFeeSchedule(fees, token, payee.capacity) },
    })
  }
  const found = routeAmountWithFees(amount, mediations)
  return found ? found.amount - amount : 0n
}
