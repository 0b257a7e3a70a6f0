import { capacity, distributable } from '../channel/amounts.ts'
import { channelFeeSchedule, noMediationFees } from '../fees/schedule.ts'
import type { FeeSchedule, PFSCapacityUpdate } from '../messages/types.ts'
import type { Effect, FeeAnnouncement } from '../state/effects.ts'
import type { Channel, NodeState } from '../state/types.ts'

/**
 * Whether a channel of ours is announced to a pathfinding service (docs/decisions/0073): open (a service refuses a
 * closed one) and not waiting for its partner's sync after a restore (docs/decisions/0034: its nonces are not known
 * yet, and an update with nonces that went back is refused as stale).
 */
export function announced(channel: Channel | undefined): channel is Channel {
  return channel !== undefined && channel.state === 'opened' && !channel.waitingSync && !channel.forgotten
}

/**
 * What a channel of ours can carry, as Raiden's `PFSCapacityUpdate.from_channel_state` says it: each side's nonce (the
 * last it used) and what each side can still lock towards the other (its distributable amount), and our reveal timeout.
 */
export function capacityUpdateOf(state: Pick<NodeState, 'address' | 'chainId'>, channel: Channel): PFSCapacityUpdate {
  return {
    type: 'PFSCapacityUpdate',
    canonical_identifier: { chain_identifier: channel.chainId, token_network_address: channel.tokenNetwork, channel_identifier: channel.id },
    updating_participant: state.address,
    other_participant: channel.partner,
    updating_nonce: channel.our.nonce,
    other_nonce: channel.partnerEnd.nonce,
    updating_capacity: distributable(channel.our, channel.partnerEnd),
    other_capacity: distributable(channel.partnerEnd, channel.our),
    reveal_timeout: channel.revealTimeout,
  }
}

/**
 * What we charge for mediating through a channel of ours (Raiden's `PFSFeeUpdate.from_channel_state`): the schedule a
 * mediation computes for it (docs/decisions/0069), from the fees in the state and the channel's capacity now.
 */
export function feeAnnouncementOf(state: Pick<NodeState, 'address' | 'mediationFees'>, channel: Channel): FeeAnnouncement {
  return {
    type: 'PFSFeeUpdate',
    canonical_identifier: { chain_identifier: channel.chainId, token_network_address: channel.tokenNetwork, channel_identifier: channel.id },
    updating_participant: state.address,
    fee_schedule: channelFeeSchedule(state.mediationFees ?? noMediationFees, channel.token, capacity(channel.our, channel.partnerEnd)),
  }
}

const sameCapacity = (a: PFSCapacityUpdate, b: PFSCapacityUpdate) =>
  a.updating_nonce === b.updating_nonce &&
  a.other_nonce === b.other_nonce &&
  a.updating_capacity === b.updating_capacity &&
  a.other_capacity === b.other_capacity &&
  a.reveal_timeout === b.reveal_timeout

function sameSchedule(a: FeeSchedule, b: FeeSchedule): boolean {
  if (a.cap_fees !== b.cap_fees || a.flat !== b.flat || a.proportional !== b.proportional) return false
  const [p, q] = [a.imbalance_penalty, b.imbalance_penalty]
  if (p === null || q === null) return p === q
  return p.length === q.length && p.every(([x, y], i) => x === q[i]![0] && y === q[i]![1])
}

/**
 * The announcements a transition from `before` to `after` calls for, in the order of the state's channels: a capacity
 * update for each channel of ours whose nonces, capacities or reveal timeout changed (or that became announced: opened,
 * or synced after a restore), and a fee update for each whose schedule changed (its capacity, the node's fees). Raiden
 * decides by the kind of state change (raiden_service.py PFS_UPDATE_CAPACITY_STATE_CHANGES); comparing what the update
 * would say catches every change that moves it, whatever its kind, and none that does not.
 */
export function announcementsOf(before: NodeState, after: NodeState): Effect[] {
  const feesChanged = before.mediationFees !== after.mediationFees
  if (before.channels === after.channels && !feesChanged) return []
  const out: Effect[] = []
  for (const [channelKey, channel] of Object.entries(after.channels)) {
    const old = before.channels[channelKey]
    if ((old === channel && !feesChanged) || !announced(channel)) continue
    const was = announced(old) ? old : undefined
    const update = capacityUpdateOf(after, channel)
    if (!was || !sameCapacity(update, capacityUpdateOf(before, was))) out.push({ type: 'announceCapacity', channelKey, update })
    // A schedule follows the channel's capacity (both deposits less both withdrawals) and the node's fees: nothing else.
    if (was && !feesChanged && capacity(was.our, was.partnerEnd) === capacity(channel.our, channel.partnerEnd)) continue
    const fees = feeAnnouncementOf(after, channel)
    if (!was || !sameSchedule(fees.fee_schedule, feeAnnouncementOf(before, was).fee_schedule)) out.push({ type: 'announceFees', channelKey, update: fees })
  }
  return out
}
