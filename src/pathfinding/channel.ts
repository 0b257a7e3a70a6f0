import type { Address } from 'viem'
import type { FeeSchedule, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../protocol/messages/types.ts'
import type { StateChange } from '../protocol/state/changes.ts'

/**
 * A channel as the pathfinding service knows it (docs/decisions/0070): what the chain says of each participant
 * (deposit, withdrawn) and what each participant announced itself (its latest PFSCapacityUpdate and PFSFeeUpdate,
 * held as signed), and what follows for each direction. Plain data the shell stores; nothing here reads a clock, the
 * chain or the network.
 */

/** One participant of a channel: the chain's totals, and its own latest announcements (checked by updates.ts). */
export type PfsParticipant = {
  address: Address
  deposit: bigint
  withdrawn: bigint
  capacityUpdate?: Signed<PFSCapacityUpdate>
  feeUpdate?: Signed<PFSFeeUpdate>
}

export type PfsChannel = {
  tokenNetwork: Address
  channelId: bigint
  settleTimeout: bigint
  /** Closed on chain: no route uses it and no update is taken for it; forgotten once settled. */
  closed: boolean
  /** In ChannelOpened's order. */
  participants: readonly [PfsParticipant, PfsParticipant]
}

/** The chain events the service follows, as the chain layer decodes them (src/chain/chainEvents.ts). */
export type PathfindingChainEvent = Extract<
  StateChange,
  { type: 'tokenNetworkCreated' | 'channelOpened' | 'channelDeposit' | 'channelWithdraw' | 'channelClosed' | 'channelSettled' }
>
export type ChannelEvent = Exclude<PathfindingChainEvent, { type: 'tokenNetworkCreated' }>

/** Raiden's reveal timeout for a direction whose participant announced none (raiden-services DEFAULT_REVEAL_TIMEOUT). */
export const DEFAULT_REVEAL_TIMEOUT = 50n

/** The schedule of a participant that announced none: no fee (Raiden's FeeScheduleState defaults). */
export const NO_FEES: FeeSchedule = { cap_fees: true, flat: 0n, proportional: 0n, imbalance_penalty: null }

export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/** The index (0 or 1) of `address` among the channel's participants, or -1. */
export function participantIndex(channel: PfsChannel, address: Address): 0 | 1 | -1 {
  if (sameAddress(channel.participants[0].address, address)) return 0
  if (sameAddress(channel.participants[1].address, address)) return 1
  return -1
}

/**
 * What the chain lets any direction carry: all that was deposited and not withdrawn. A participant's balance never
 * exceeds it, whatever was transferred; a claim above it (a deposit the service has not confirmed yet, or a lie) is
 * cut to it.
 */
export function chainBound(channel: PfsChannel): bigint {
  const [a, b] = channel.participants
  const bound = a.deposit + b.deposit - a.withdrawn - b.withdrawn
  return bound > 0n ? bound : 0n
}

/**
 * What the direction from participant `from` to the other can carry: the smaller of the two sides' claims (the
 * sender's own capacity, and what the receiver says the sender has), within the chain's bound. A side that announced
 * nothing claims 0, so a channel carries nothing until both have spoken (raiden-services' rule): neither side gains
 * by lying, as the other's word caps its own.
 */
export function directionCapacity(channel: PfsChannel, from: 0 | 1): bigint {
  const own = channel.participants[from].capacityUpdate?.updating_capacity ?? 0n
  const theirs = channel.participants[1 - from]!.capacityUpdate?.other_capacity ?? 0n
  const bound = chainBound(channel)
  let capacity = own < theirs ? own : theirs
  if (bound < capacity) capacity = bound
  return capacity
}

/** The reveal timeout participant `from` keeps on this channel, as it announced it. */
export function revealTimeoutOf(channel: PfsChannel, from: 0 | 1): bigint {
  return channel.participants[from].capacityUpdate?.reveal_timeout ?? DEFAULT_REVEAL_TIMEOUT
}

/** The fee schedule participant `index` announced for this channel (it applies to what it mediates through it). */
export function feeScheduleOf(channel: PfsChannel, index: 0 | 1): FeeSchedule {
  return channel.participants[index].feeUpdate?.fee_schedule ?? NO_FEES
}

/**
 * A channel after one of its chain events, or undefined once settled. Events come confirmed and in chain order, but
 * one applied again (a range synced twice) changes nothing: a repeated ChannelOpened keeps what was announced, and
 * deposits and withdrawals are totals that only grow on chain, so the larger one is kept.
 */
export function channelAfterEvent(channel: PfsChannel | undefined, event: ChannelEvent): PfsChannel | undefined {
  if (event.type === 'channelOpened') {
    if (channel) return channel
    const side = (address: Address): PfsParticipant => ({ address, deposit: 0n, withdrawn: 0n })
    return {
      tokenNetwork: event.tokenNetwork,
      channelId: event.channelId,
      settleTimeout: event.settleTimeout,
      closed: false,
      participants: [side(event.participant1), side(event.participant2)],
    }
  }
  if (!channel) return undefined
  switch (event.type) {
    case 'channelDeposit':
    case 'channelWithdraw': {
      const index = participantIndex(channel, event.participant)
      if (index === -1) return channel
      const side = channel.participants[index]
      const next =
        event.type === 'channelDeposit'
          ? { ...side, deposit: event.totalDeposit > side.deposit ? event.totalDeposit : side.deposit }
          : { ...side, withdrawn: event.totalWithdraw > side.withdrawn ? event.totalWithdraw : side.withdrawn }
      return withParticipant(channel, index, next)
    }
    case 'channelClosed':
      return channel.closed ? channel : { ...channel, closed: true }
    case 'channelSettled':
      return undefined
  }
}

/** The channel with participant `index` replaced. */
export function withParticipant(channel: PfsChannel, index: 0 | 1, participant: PfsParticipant): PfsChannel {
  return { ...channel, participants: index === 0 ? [participant, channel.participants[1]] : [channel.participants[0], participant] }
}

const followed = new Set<StateChange['type']>(['tokenNetworkCreated', 'channelOpened', 'channelDeposit', 'channelWithdraw', 'channelClosed', 'channelSettled'])

/** The chain layer's change for an event, when it is one the service follows (others, secrets or unlocks, say nothing of routes). */
export function pathfindingEventOf(change: StateChange | undefined): PathfindingChainEvent | undefined {
  return change && followed.has(change.type) ? (change as PathfindingChainEvent) : undefined
}
