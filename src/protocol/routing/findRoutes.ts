import type { Address } from 'viem'
import { distributable } from '../channel/amounts.ts'
import { channelWith, sameAddress } from '../state/access.ts'
import type { NodeState } from '../state/types.ts'
import { whyRouteCannotHoldLock } from './routeHoldsLock.ts'

export type FindRoutesParameters = {
  tokenNetwork: Address
  target: Address
  amount: bigint
  /**
   * The lock timeout the payment will use, to leave out routes that cannot hold its lock (whyRouteCannotHoldLock):
   * a number of blocks, or 'default' for the payment's default (twice the reveal timeout of our channel with the
   * first hop). Absent: routes are not checked against a lock; the initiator then still refuses, with the reason,
   * a route that cannot hold the lock it makes.
   */
  lockTimeout?: bigint | 'default'
  maxRoutes?: number
  maxHops?: number
}

type Edge = { to: Address; settleTimeout?: bigint }
type Path = { hops: Address[]; lockTimeout?: bigint }

/**
 * Candidate routes to `target`, shortest first: each is the list of hops after us. The first hop must be one of
 * our open channels that can carry `amount` now; further hops use open channels of the public graph whose
 * forwarding side has put in at least `amount` (a hint: their balances are private). Direct comes first. With a
 * `lockTimeout`, a route some channel of which cannot hold the payment's lock is no route.
 */
export function findRoutes(state: NodeState, { tokenNetwork, target, amount, lockTimeout, maxRoutes = 3, maxHops = 5 }: FindRoutesParameters): Address[][] {
  const network = state.tokenNetworks[tokenNetwork]
  if (!network) return []
  const key = (a: Address) => a.toLowerCase()
  // The graph's adjacency, built only when a route longer than one hop is looked for: a direct payment whose
  // partner is the target (the usual case) does not pay for the whole network's channels.
  let neighbours: Map<string, Edge[]> | undefined
  const adjacency = () => {
    if (neighbours) return neighbours
    const built = new Map<string, Edge[]>()
    const link = (from: Address, to: Address, settleTimeout?: bigint) => {
      const list = built.get(key(from)) ?? []
      list.push({ to, ...(settleTimeout !== undefined ? { settleTimeout } : {}) })
      built.set(key(from), list)
    }
    for (const c of Object.values(network.graph)) {
      if (!c.open) continue
      if (c.deposit1 - c.withdrawn1 >= amount) link(c.participant1, c.participant2, c.settleTimeout)
      if (c.deposit2 - c.withdrawn2 >= amount) link(c.participant2, c.participant1, c.settleTimeout)
    }
    neighbours = built
    return built
  }
  const routes: Address[][] = []
  // Breadth-first over simple paths: the shortest routes come first, and each path visits a node once.
  let frontier: Path[] = []
  for (const channel of Object.values(state.channels)) {
    if (!sameAddress(channel.tokenNetwork, tokenNetwork) || channel.state !== 'opened') continue
    // A restored channel carries nothing before its partner's sync (docs/decisions/0034).
    if (channel.waitingSync) continue
    if (distributable(channel.our, channel.partnerEnd) < amount) continue
    const timeout = lockTimeout === undefined ? undefined : lockTimeout === 'default' ? 2n * channel.revealTimeout : lockTimeout
    // Our own channel must hold the lock (its reveal and settle timeouts); the rest is checked hop by hop.
    if (timeout !== undefined && whyRouteCannotHoldLock(state, { tokenNetwork, route: [channel.partner], lockTimeout: timeout })) continue
    if (sameAddress(channel.partner, target)) routes.push([channel.partner])
    else frontier.push({ hops: [channel.partner], ...(timeout !== undefined ? { lockTimeout: timeout } : {}) })
  }
  for (let hops = 2; hops <= maxHops && frontier.length && routes.length < maxRoutes; hops++) {
    const next: Path[] = []
    for (const path of frontier) {
      for (const edge of adjacency().get(key(path.hops.at(-1)!)) ?? []) {
        const hop = edge.to
        if (sameAddress(hop, state.address) || path.hops.some((p) => sameAddress(p, hop))) continue
        // A lock longer than a channel's settle timeout cannot cross it (the hop before it would not forward it).
        if (path.lockTimeout !== undefined && edge.settleTimeout !== undefined && path.lockTimeout > edge.settleTimeout) continue
        if (sameAddress(hop, target)) routes.push([...path.hops, hop])
        else next.push({ ...path, hops: [...path.hops, hop] })
      }
    }
    frontier = next.slice(0, 1000)
  }
  // Prefer the direct channel when it exists even if it was found among others.
  const direct = channelWith(state, tokenNetwork, target)
  routes.sort((a, b) => a.length - b.length || (direct && sameAddress(a[0], target) ? -1 : 0))
  return routes.slice(0, maxRoutes)
}

/**
 * When `findRoutes` with this `lockTimeout` finds no route but routes exist without the lock check: why none of
 * them can hold the lock (a reason a user can act on). Undefined when a route holds it, or when there is no route
 * at all (that has other reasons: no channel, too little capacity).
 */
export function whyNoRouteHoldsLock(state: NodeState, parameters: FindRoutesParameters & { lockTimeout: bigint | 'default' }): string | undefined {
  // Whether one route holds it: one is enough to know.
  if (findRoutes(state, { ...parameters, maxRoutes: 1 }).length > 0) return undefined
  const { lockTimeout, ...unchecked } = parameters
  const candidates = findRoutes(state, unchecked)
  if (candidates.length === 0) return undefined
  const reasons = candidates.map((route) => {
    const why = whyRouteCannotHoldLock(state, { tokenNetwork: parameters.tokenNetwork, route, ...(lockTimeout !== 'default' ? { lockTimeout } : {}) })
    return `via ${route.join(', ')}: ${why ?? 'a route through these hops cannot hold the lock'}`
  })
  return `no route can hold the payment's lock: ${reasons.join('; ')}`
}
