import type { Address } from 'viem'
import type { StateChange } from '../state/changes.ts'
import type { GraphChannel, NodeState, TokenNetworkState } from '../state/types.ts'

/** Keeps the public channel graph of each token network in step with chain events (every channel, not only ours). */
function withGraph(state: NodeState, tokenNetwork: Address, update: (graph: TokenNetworkState['graph']) => TokenNetworkState['graph']): NodeState {
  const network = state.tokenNetworks[tokenNetwork]
  if (!network) return state
  return { ...state, tokenNetworks: { ...state.tokenNetworks, [tokenNetwork]: { ...network, graph: update(network.graph) } } }
}

export function graphOnOpened(state: NodeState, change: Extract<StateChange, { type: 'channelOpened' }>): NodeState {
  return withGraph(state, change.tokenNetwork, (graph) => ({
    ...graph,
    [change.channelId.toString()]: {
      participant1: change.participant1,
      participant2: change.participant2,
      deposit1: 0n,
      deposit2: 0n,
      withdrawn1: 0n,
      withdrawn2: 0n,
      open: true,
      settleTimeout: change.settleTimeout,
    },
  }))
}

export function graphOnAmounts(
  state: NodeState,
  tokenNetwork: Address,
  channelId: bigint,
  participant: Address,
  amounts: { deposit?: bigint; withdrawn?: bigint },
): NodeState {
  return withGraph(state, tokenNetwork, (graph) => {
    const c = graph[channelId.toString()]
    if (!c) return graph
    const first = c.participant1.toLowerCase() === participant.toLowerCase()
    const next: GraphChannel = { ...c }
    if (amounts.deposit !== undefined) next[first ? 'deposit1' : 'deposit2'] = amounts.deposit
    if (amounts.withdrawn !== undefined) next[first ? 'withdrawn1' : 'withdrawn2'] = amounts.withdrawn
    return { ...graph, [channelId.toString()]: next }
  })
}

export function graphOnClosed(state: NodeState, tokenNetwork: Address, channelId: bigint): NodeState {
  return withGraph(state, tokenNetwork, (graph) => {
    const c = graph[channelId.toString()]
    return c ? { ...graph, [channelId.toString()]: { ...c, open: false } } : graph
  })
}

export function graphOnSettled(state: NodeState, tokenNetwork: Address, channelId: bigint): NodeState {
  return withGraph(state, tokenNetwork, (graph) => {
    const { [channelId.toString()]: _, ...rest } = graph
    return rest
  })
}
