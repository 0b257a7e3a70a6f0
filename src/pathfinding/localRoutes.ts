import type { Address } from 'viem'
import { capacity as channelCapacity, distributable } from '../protocol/channel/amounts.ts'
import { channelFeeSchedule, noMediationFees } from '../protocol/fees/schedule.ts'
import type { FeeSchedule } from '../protocol/messages/types.ts'
import { whyRouteCannotHoldLock } from '../protocol/routing/routeHoldsLock.ts'
import type { Channel, NodeState } from '../protocol/state/types.ts'
import { chainBound, sameAddress, type PfsChannel } from './channel.ts'
import { heardChannelKey, pfsChannelOf, tokenNetworkOf, type Heard } from './heard.ts'
import { serviceMediationFee } from './mediationFee.ts'
import { createTokenNetworkView, putChannel, type SlotOverrides, type TokenNetworkView } from './network.ts'
import { findPaths, MAX_PATHS_PER_REQUEST } from './paths.ts'

/**
 * A node's own routes, improved by what it heard (docs/decisions/0074): the pathfinding service's search (paths.ts,
 * Raiden's order: fewest hops and lowest fees first, each next route through other channels where it can) over the
 * node's graph, where each direction carries what its participants announced (the smaller of both sides' claims, as
 * the service takes it), our own channels exactly, and a channel the node heard nothing of what its deposits hint;
 * each mediator charges what it announced, or, unheard, what this node charges (its guess of before, 0069).
 */

export type LocalRoute = {
  /** The hops after us, ending at the target. */
  route: Address[]
  /** What the mediators take in all, by the schedules heard (or guessed). */
  fee: bigint
}

export type LocalRoutesParameters = {
  tokenNetwork: Address
  target: Address
  amount: bigint
  /** The payment's lock timeout; absent: twice the reveal timeout of our channel with the first hop. */
  lockTimeout?: bigint
  maxRoutes?: number
}

const min = (...values: bigint[]) => values.reduce((a, b) => (b < a ? b : a))

/** What the chain hints participant `i` can send: what it put in less what it took out. */
function hint(channel: PfsChannel, i: 0 | 1): bigint {
  const { deposit, withdrawn } = channel.participants[i]
  return deposit > withdrawn ? deposit - withdrawn : 0n
}

/** What a search takes of one channel of the graph in place of the service's rules: see the module's comment. */
function overridesOf(channel: PfsChannel, ours: Channel | undefined, guess: (capacity: bigint) => FeeSchedule): SlotOverrides {
  const bound = chainBound(channel)
  const heardSchedule = (i: 0 | 1) => channel.participants[i].feeUpdate?.fee_schedule ?? guess(bound)
  if (ours) {
    // Ours exactly: what each side can lock now, nothing before the partner's sync after a restore (0034).
    const usable = ours.state === 'opened' && !ours.waitingSync
    const out = usable ? distributable(ours.our, ours.partnerEnd) : 0n
    const back = usable ? distributable(ours.partnerEnd, ours.our) : 0n
    const first = sameAddress(channel.participants[0].address, ours.partner) ? 1 : 0
    const schedule = guess(channelCapacity(ours.our, ours.partnerEnd))
    return {
      capacity: first === 0 ? [out, back] : [back, out],
      // Only ours is known to be kept: the partner's is checked by whyRouteCannotHoldLock as before.
      revealTimeout: [ours.revealTimeout, ours.revealTimeout],
      schedule: first === 0 ? [schedule, heardSchedule(1)] : [heardSchedule(0), schedule],
    }
  }
  const direction = (i: 0 | 1) =>
    min(
      channel.participants[i].capacityUpdate?.updating_capacity ?? hint(channel, i),
      channel.participants[1 - i]!.capacityUpdate?.other_capacity ?? hint(channel, i),
      bound,
    )
  return {
    capacity: [direction(0), direction(1)],
    // A reveal timeout not announced is not known: not checked (as before).
    revealTimeout: [channel.participants[0].capacityUpdate?.reveal_timeout ?? 0n, channel.participants[1].capacityUpdate?.reveal_timeout ?? 0n],
    schedule: [heardSchedule(0), heardSchedule(1)],
  }
}

/** The node's graph of one token network as the service's search takes it, with what the node heard and knows. */
export function localView(state: NodeState, heard: Heard, tokenNetwork: Address): TokenNetworkView | undefined {
  const network = tokenNetworkOf(state, tokenNetwork)
  if (!network) return undefined
  const fees = state.mediationFees ?? noMediationFees
  const schedule = (capacity: bigint) => channelFeeSchedule(fees, network.token, capacity)
  // Our channels by id: our own schedule is what we charge (we mediate nothing of our own payment: it weighs nothing).
  const ours = new Map<string, Channel>()
  for (const c of Object.values(state.channels)) if (sameAddress(c.tokenNetwork, tokenNetwork)) ours.set(c.id.toString(), c)
  const view = createTokenNetworkView(tokenNetwork)
  for (const [id, c] of Object.entries(network.graph)) {
    if (!c.open) continue
    const channelId = BigInt(id)
    const channel = pfsChannelOf(tokenNetwork, channelId, c, heard.get(heardChannelKey(tokenNetwork, channelId)))
    putChannel(view, channel, overridesOf(channel, ours.get(id), schedule))
  }
  return view
}

/**
 * Up to `maxRoutes` routes to `target` for `amount`, in the service's order, each with its estimated fee; none when
 * what the node knows and heard says none can carry it. A route whose channels cannot hold the payment's lock (as far
 * as the node can tell: whyRouteCannotHoldLock) is left out.
 */
export function localRoutes(state: NodeState, heard: Heard, { tokenNetwork, target, amount, lockTimeout, maxRoutes = 3 }: LocalRoutesParameters): LocalRoute[] {
  if (amount < 1n || sameAddress(target, state.address)) return []
  const view = localView(state, heard, tokenNetwork)
  if (!view) return []
  const found = findPaths(
    view,
    {
      from: state.address,
      to: target,
      value: amount,
      maxPaths: Math.max(1, Math.min(MAX_PATHS_PER_REQUEST, maxRoutes)),
      ...(lockTimeout !== undefined ? { lockTimeout } : {}),
    },
    // Presence is the transport's: every node is taken to be online, as the routing by deposits did.
    { isOnline: () => true, mediationFee: serviceMediationFee },
  )
  if (!found.ok) return []
  return found.paths
    .map((p) => ({ route: p.path.slice(1), fee: p.estimatedFee }))
    .filter(({ route }) => whyRouteCannotHoldLock(state, { tokenNetwork, route, ...(lockTimeout !== undefined ? { lockTimeout } : {}) }) === undefined)
}
