import type { Address } from 'viem'
import { channelWith, sameAddress } from '../state/access.ts'
import type { GraphChannel, NodeState } from '../state/types.ts'

export type RouteHoldsLockParameters = {
  tokenNetwork: Address
  /** The hops after us, ending at the target. */
  route: Address[]
  /** Blocks from now until the lock expires (it expires at `block + lockTimeout - 1`); absent: twice our first channel's reveal timeout. */
  lockTimeout?: bigint
}

/** The open channel of the public graph between `a` and `b`, if the chain events told us of one. */
export function graphChannelBetween(state: NodeState, tokenNetwork: Address, a: Address, b: Address): GraphChannel | undefined {
  const graph = state.tokenNetworks[tokenNetwork]?.graph ?? {}
  return Object.values(graph).find(
    (c) => c.open && ((sameAddress(c.participant1, a) && sameAddress(c.participant2, b)) || (sameAddress(c.participant1, b) && sameAddress(c.participant2, a))),
  )
}

/**
 * Why a lock of `lockTimeout` blocks cannot travel along `route`, as far as we can know it, or undefined when it
 * can (docs/protocol.md §3.7, §3.8):
 * - our channel with the first hop: the lock must still be outside its reveal timeout when it arrives (else the
 *   payee never asks for the secret), and the lock timeout must not exceed its settle timeout;
 * - every further channel: the lock timeout must not exceed its settle timeout (known to everyone from
 *   ChannelOpened), or the hop before it cannot forward the lock. Their reveal timeouts are private.
 */
export function whyRouteCannotHoldLock(state: NodeState, { tokenNetwork, route, lockTimeout }: RouteHoldsLockParameters): string | undefined {
  const first = route[0]
  const ours = first ? channelWith(state, tokenNetwork, first) : undefined
  if (!first || !ours) return 'no channel with the first hop'
  const timeout = lockTimeout ?? 2n * ours.revealTimeout
  const named =
    lockTimeout === undefined
      ? `the lock timeout ${timeout} (twice the reveal timeout ${ours.revealTimeout} of our channel with ${first})`
      : `the lock timeout ${timeout}`
  const links: { a: Address; b: Address; settle: bigint }[] = []
  for (let i = 0; i + 1 < route.length; i++) {
    const [a, b] = [route[i]!, route[i + 1]!]
    const settle = graphChannelBetween(state, tokenNetwork, a, b)?.settleTimeout
    if (settle !== undefined) links.push({ a, b, settle })
  }
  // What would fit instead: the lock must arrive with more than our reveal timeout left, and fit every settle timeout.
  const lowest = links.reduce((min, l) => (l.settle < min ? l.settle : min), ours.settleTimeout)
  const fits =
    ours.revealTimeout + 2n <= lowest
      ? `a lock timeout from ${ours.revealTimeout + 2n} to ${lowest} fits this route`
      : `no lock timeout fits this route unless the reveal timeout of our channel with ${first} is at most ${lowest - 2n}`
  // The lock expires at block + timeout - 1: that many blocks are left when the first hop receives it.
  if (timeout - 1n <= ours.revealTimeout)
    return `${named} leaves ${timeout - 1n} blocks, not more than the reveal timeout ${ours.revealTimeout} of our channel with ${first} (${fits})`
  if (timeout > ours.settleTimeout) return `${named} exceeds the settle timeout ${ours.settleTimeout} of our channel with ${first} (${fits})`
  const short = links.find((l) => timeout > l.settle)
  if (short) return `${named} exceeds the settle timeout ${short.settle} of the channel between ${short.a} and ${short.b} (${fits})`
  return undefined
}
