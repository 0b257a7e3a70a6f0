import type { Address } from 'viem'
import type { PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../protocol/messages/types.ts'
import type { GraphChannel, NodeState, TokenNetworkState } from '../protocol/state/types.ts'
import type { PfsChannel, PfsParticipant } from './channel.ts'
import { createPathfindingState, createTokenNetworkView, putChannel } from './network.ts'
import { checkUpdate, type UpdateContext, type UpdateOutcome } from './updates.ts'

/**
 * What a node heard of the network's channels from the announcements its partners pass on (docs/decisions/0074): per
 * channel and participant, the newest PFSCapacityUpdate and PFSFeeUpdate that passed the pathfinding service's own
 * checks (updates.ts) against the node's public graph. Hints, not money: held in memory by the shell, never
 * committed, heard again after a restart. Nothing here reads a clock or the network.
 */

export type HeardUpdate = Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>
export type HeardSide = { capacityUpdate?: Signed<PFSCapacityUpdate>; feeUpdate?: Signed<PFSFeeUpdate> }
/** By channel (`heardChannelKey`), then by participant (lower case). */
export type Heard = Map<string, Map<string, HeardSide>>

const UNKNOWN_SETTLE_TIMEOUT = (1n << 64n) - 1n

export const heardChannelKey = (tokenNetwork: Address, channelId: bigint): string => `${tokenNetwork.toLowerCase()}:${channelId}`

/** The node's state of a token network, whatever the case of its address. */
export function tokenNetworkOf(state: Pick<NodeState, 'tokenNetworks'>, tokenNetwork: Address): TokenNetworkState | undefined {
  const exact = state.tokenNetworks[tokenNetwork]
  if (exact) return exact
  const lower = tokenNetwork.toLowerCase()
  return Object.entries(state.tokenNetworks).find(([address]) => address.toLowerCase() === lower)?.[1]
}

/** A channel of the node's graph as the service's core takes it, with what its participants announced. */
export function pfsChannelOf(tokenNetwork: Address, channelId: bigint, c: GraphChannel, sides: Map<string, HeardSide> | undefined): PfsChannel {
  const side = (address: Address, deposit: bigint, withdrawn: bigint): PfsParticipant => ({ address, deposit, withdrawn, ...sides?.get(address.toLowerCase()) })
  return {
    tokenNetwork,
    channelId,
    // Absent in states stored before it was kept: not known, so it bounds no lock (as the routing by deposits took it).
    settleTimeout: c.settleTimeout ?? UNKNOWN_SETTLE_TIMEOUT,
    closed: !c.open,
    participants: [side(c.participant1, c.deposit1, c.withdrawn1), side(c.participant2, c.deposit2, c.withdrawn2)],
  }
}

/**
 * Checks a received announcement as the pathfinding service does (chain, token network, a channel open in the node's
 * graph, its participant and partner, amounts in range, newer than the one held, signed by its participant: the
 * signature last, so a replay costs no recovery) and holds it when accepted. `resent` and `refused` change nothing:
 * only an accepted one is news to pass on.
 */
export function hear(heard: Heard, state: Pick<NodeState, 'chainId' | 'tokenNetworks'>, update: HeardUpdate, context: UpdateContext): UpdateOutcome {
  const id = update.canonical_identifier
  const key = heardChannelKey(id.token_network_address, id.channel_identifier)
  // The service's view of this one channel: the node's graph says what the chain does.
  const view = createPathfindingState(state.chainId)
  const network = tokenNetworkOf(state, id.token_network_address)
  if (network) {
    const tokenNetworkView = createTokenNetworkView(id.token_network_address)
    const graphChannel = network.graph[id.channel_identifier.toString()]
    if (graphChannel) putChannel(tokenNetworkView, pfsChannelOf(id.token_network_address, id.channel_identifier, graphChannel, heard.get(key)))
    view.networks.set(id.token_network_address.toLowerCase(), tokenNetworkView)
  }
  const outcome = checkUpdate(view, update, context)
  if (outcome.outcome === 'accepted') hold(heard, update)
  return outcome
}

/** Holds an update as the newest of its channel, participant and kind (the node's own, which it signed itself, or one checked by `hear`). */
export function hold(heard: Heard, update: HeardUpdate): void {
  const id = update.canonical_identifier
  const key = heardChannelKey(id.token_network_address, id.channel_identifier)
  let sides = heard.get(key)
  if (!sides) {
    sides = new Map()
    heard.set(key, sides)
  }
  const who = update.updating_participant.toLowerCase()
  const held = sides.get(who) ?? {}
  sides.set(who, update.type === 'PFSCapacityUpdate' ? { ...held, capacityUpdate: update } : { ...held, feeUpdate: update })
}

/** Forgets what was heard of channels no longer open in the node's graph (closed or settled): the store stays as large as the graph. */
export function forgetClosed(heard: Heard, state: Pick<NodeState, 'tokenNetworks'>): void {
  for (const key of heard.keys()) {
    const [tokenNetwork, id] = key.split(':') as [Address, string]
    if (!tokenNetworkOf(state, tokenNetwork)?.graph[id]?.open) heard.delete(key)
  }
}

/** How many updates are held. */
export function heardCount(heard: Heard): number {
  let n = 0
  for (const sides of heard.values()) for (const side of sides.values()) n += (side.capacityUpdate ? 1 : 0) + (side.feeUpdate ? 1 : 0)
  return n
}
