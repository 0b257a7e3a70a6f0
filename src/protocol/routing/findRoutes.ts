import type { Address } from 'viem'
import { distributable } from '../channel/amounts.ts'
import { channelWith, sameAddress } from '../state/access.ts'
import type { NodeState } from '../state/types.ts'

export type FindRoutesParameters = { tokenNetwork: Address; target: Address; amount: bigint; maxRoutes?: number; maxHops?: number }

/**
 * Candidate routes to `target`, shortest first: each is the list of hops after us. The first hop must be one of
 * our open channels that can carry `amount` now; further hops use open channels of the public graph whose
 * forwarding side has put in at least `amount` (a hint: their balances are private). Direct comes first.
 */
export function findRoutes(state: NodeState, { tokenNetwork, target, amount, maxRoutes = 3, maxHops = 5 }: FindRoutesParameters): Address[][] {
  const network = state.tokenNetworks[tokenNetwork]
  if (!network) return []
  const key = (a: Address) => a.toLowerCase()
  const neighbours = new Map<string, Address[]>()
  const link = (from: Address, to: Address) => {
    const list = neighbours.get(key(from)) ?? []
    list.push(to)
    neighbours.set(key(from), list)
  }
  for (const c of Object.values(network.graph)) {
    if (!c.open) continue
    if (c.deposit1 - c.withdrawn1 >= amount) link(c.participant1, c.participant2)
    if (c.deposit2 - c.withdrawn2 >= amount) link(c.participant2, c.participant1)
  }
  const routes: Address[][] = []
  // Breadth-first over simple paths: the shortest routes come first, and each path visits a node once.
  let frontier: Address[][] = []
  for (const channel of Object.values(state.channels)) {
    if (!sameAddress(channel.tokenNetwork, tokenNetwork) || channel.state !== 'opened') continue
    if (distributable(channel.our, channel.partnerEnd) < amount) continue
    if (sameAddress(channel.partner, target)) routes.push([channel.partner])
    else frontier.push([channel.partner])
  }
  for (let hops = 2; hops <= maxHops && frontier.length && routes.length < maxRoutes; hops++) {
    const next: Address[][] = []
    for (const path of frontier) {
      for (const hop of neighbours.get(key(path.at(-1)!)) ?? []) {
        if (sameAddress(hop, state.address) || path.some((p) => sameAddress(p, hop))) continue
        if (sameAddress(hop, target)) routes.push([...path, hop])
        else next.push([...path, hop])
      }
    }
    frontier = next.slice(0, 1000)
  }
  // Prefer the direct channel when it exists even if it was found among others.
  const direct = channelWith(state, tokenNetwork, target)
  routes.sort((a, b) => a.length - b.length || (direct && sameAddress(a[0], target) ? -1 : 0))
  return routes.slice(0, maxRoutes)
}
