import type { Address } from 'viem'
import type { FeeSchedule, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../protocol/messages/types.ts'
import type { StateChange } from '../protocol/state/changes.ts'

/**
 * The pathfinding service's view of the token networks (docs/decisions/0070): every channel the chain opened and
 * has not settled, with what the chain says of each participant (deposit, withdrawn) and what each participant
 * announced itself (its latest PFSCapacityUpdate and PFSFeeUpdate, held as signed). The records are plain data the
 * shell stores; a view indexes them for the search. Nothing here reads a clock, the chain or the network.
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

/**
 * One channel as the search reads it: the record, its participants' node numbers, what each direction can carry and
 * the reveal timeout its sender keeps, and each participant's flat and proportional fee as numbers (for edge weights
 * only), worked out once when the record is put.
 */
export type ChannelSlot = {
  channel: PfsChannel
  ends: readonly [number, number]
  capacity: readonly [bigint, bigint]
  revealTimeout: readonly [bigint, bigint]
  flatFee: readonly [number, number]
  proportionalFee: readonly [number, number]
}

/**
 * One token network's channels, indexed for the search: nodes are numbered in the order they first appear, each
 * channel has a slot (directed edge `2 * slot + i` leaves participant i), and each node lists its channels' slots.
 * Changed only through `putChannel` and `removeChannel`, which keep the index in step with the records.
 */
export type TokenNetworkView = {
  address: Address
  /** By channel id (decimal): open channels and closed ones not yet settled. */
  channels: Map<string, PfsChannel>
  /** Lower-case address to node number, and back. */
  nodeOf: Map<string, number>
  addresses: Address[]
  /** Per node, the slots of its channels. */
  adjacency: number[][]
  /** By slot; undefined once the channel is settled. */
  slots: (ChannelSlot | undefined)[]
  slotOf: Map<string, number>
}

export function createTokenNetworkView(address: Address): TokenNetworkView {
  return { address, channels: new Map(), nodeOf: new Map(), addresses: [], adjacency: [], slots: [], slotOf: new Map() }
}

function nodeNumber(view: TokenNetworkView, address: Address): number {
  const key = address.toLowerCase()
  let node = view.nodeOf.get(key)
  if (node === undefined) {
    node = view.addresses.length
    view.nodeOf.set(key, node)
    view.addresses.push(address)
    view.adjacency.push([])
  }
  return node
}

/** Puts a channel record in the view (new, or replacing the one with its id). */
export function putChannel(view: TokenNetworkView, channel: PfsChannel): void {
  const id = channel.channelId.toString()
  view.channels.set(id, channel)
  const [schedule0, schedule1] = [feeScheduleOf(channel, 0), feeScheduleOf(channel, 1)]
  const derived = {
    channel,
    capacity: [directionCapacity(channel, 0), directionCapacity(channel, 1)] as const,
    revealTimeout: [revealTimeoutOf(channel, 0), revealTimeoutOf(channel, 1)] as const,
    flatFee: [Number(schedule0.flat), Number(schedule1.flat)] as const,
    proportionalFee: [Number(schedule0.proportional), Number(schedule1.proportional)] as const,
  }
  const slot = view.slotOf.get(id)
  if (slot !== undefined) {
    view.slots[slot] = { ...derived, ends: view.slots[slot]!.ends }
    return
  }
  const ends = [nodeNumber(view, channel.participants[0].address), nodeNumber(view, channel.participants[1].address)] as const
  const fresh = view.slots.length
  view.slots.push({ ...derived, ends })
  view.slotOf.set(id, fresh)
  view.adjacency[ends[0]]!.push(fresh)
  view.adjacency[ends[1]]!.push(fresh)
}

/** Forgets a settled channel. Its nodes keep their numbers. */
export function removeChannel(view: TokenNetworkView, channelId: bigint): void {
  const id = channelId.toString()
  const slot = view.slotOf.get(id)
  view.channels.delete(id)
  if (slot === undefined) return
  for (const node of view.slots[slot]!.ends) {
    const list = view.adjacency[node]!
    const at = list.indexOf(slot)
    if (at >= 0) list.splice(at, 1)
  }
  view.slots[slot] = undefined
  view.slotOf.delete(id)
}

/** Applies one chain event of this token network to the view. */
export function applyChannelEvent(view: TokenNetworkView, event: ChannelEvent): void {
  const held = view.channels.get(event.channelId.toString())
  const next = channelAfterEvent(held, event)
  if (next === held) return
  if (next) putChannel(view, next)
  else removeChannel(view, event.channelId)
}

/** Every token network the service follows, by lower-case address, on one chain. */
export type PathfindingState = { chainId: bigint; networks: Map<string, TokenNetworkView> }

export function createPathfindingState(chainId: bigint): PathfindingState {
  return { chainId, networks: new Map() }
}

export function networkOf(state: PathfindingState, tokenNetwork: Address): TokenNetworkView | undefined {
  return state.networks.get(tokenNetwork.toLowerCase())
}

/**
 * Applies one confirmed chain event: a new token network is followed from its creation on; a channel event of a
 * network not followed is ignored (as raiden-services does).
 */
export function applyChainEvent(state: PathfindingState, event: PathfindingChainEvent): void {
  if (event.type === 'tokenNetworkCreated') {
    if (!networkOf(state, event.tokenNetwork)) state.networks.set(event.tokenNetwork.toLowerCase(), createTokenNetworkView(event.tokenNetwork))
    return
  }
  const view = networkOf(state, event.tokenNetwork)
  if (view) applyChannelEvent(view, event)
}

const followed = new Set<StateChange['type']>(['tokenNetworkCreated', 'channelOpened', 'channelDeposit', 'channelWithdraw', 'channelClosed', 'channelSettled'])

/** The chain layer's change for an event, when it is one the service follows (others, secrets or unlocks, say nothing of routes). */
export function pathfindingEventOf(change: StateChange | undefined): PathfindingChainEvent | undefined {
  return change && followed.has(change.type) ? (change as PathfindingChainEvent) : undefined
}
