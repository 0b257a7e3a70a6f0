import type { Address } from 'viem'
import type { FeeSchedule } from '../protocol/messages/types.ts'
import {
  channelAfterEvent,
  directionCapacity,
  feeScheduleOf,
  revealTimeoutOf,
  type ChannelEvent,
  type PathfindingChainEvent,
  type PfsChannel,
} from './channel.ts'

/**
 * The pathfinding service's view of the token networks it follows (docs/decisions/0070): each network's channels
 * (channel.ts), indexed for the search. Changed only through the functions here, which keep the index in step.
 */

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
  /** Each participant's fee schedule on this channel (what it charges to mediate through it). */
  schedule: readonly [FeeSchedule, FeeSchedule]
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

/**
 * What a search takes of a channel in place of what its announcements say: a node routing by what it heard
 * (src/pathfinding/localRoutes.ts) knows its own channels exactly and falls back to the chain's hints where it heard
 * nothing. The service gives none.
 */
export type SlotOverrides = Partial<Pick<ChannelSlot, 'capacity' | 'revealTimeout' | 'schedule'>>

/** Puts a channel record in the view (new, or replacing the one with its id). */
export function putChannel(view: TokenNetworkView, channel: PfsChannel, overrides: SlotOverrides = {}): void {
  const id = channel.channelId.toString()
  view.channels.set(id, channel)
  const [schedule0, schedule1] = overrides.schedule ?? [feeScheduleOf(channel, 0), feeScheduleOf(channel, 1)]
  const derived = {
    channel,
    capacity: overrides.capacity ?? ([directionCapacity(channel, 0), directionCapacity(channel, 1)] as const),
    revealTimeout: overrides.revealTimeout ?? ([revealTimeoutOf(channel, 0), revealTimeoutOf(channel, 1)] as const),
    schedule: [schedule0, schedule1] as const,
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
