import { describe, expect, test } from 'vitest'
import { findRoutes, whyNoRouteHoldsLock } from '../../../../src/protocol/routing/findRoutes.ts'
import { Network } from '../support/network.ts'

describe('findRoutes', () => {
  test('the direct channel first, then mediated routes shortest first, only over channels that can carry the amount', async () => {
    const net = new Network(['A', 'B', 'C', 'D', 'E'])
    await net.open('A', 'B', 100n, 0n)
    await net.open('B', 'C', 100n, 0n)
    await net.open('A', 'D', 100n, 0n)
    await net.open('D', 'E', 100n, 0n)
    await net.open('E', 'C', 100n, 0n)
    await net.open('A', 'C', 10n, 0n)
    const at = (n: string) => net.node(n).address
    const routes = (amount: bigint) => findRoutes(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, target: at('C'), amount })
    expect(routes(10n)).toEqual([[at('C')], [at('B'), at('C')], [at('D'), at('E'), at('C')]])
    expect(routes(50n)).toEqual([
      [at('B'), at('C')],
      [at('D'), at('E'), at('C')],
    ])
    expect(routes(101n)).toEqual([])
    // Fewer routes asked for are the first of these, found the same way (the graph is read only past one hop).
    const first = (amount: bigint, maxRoutes: number) =>
      findRoutes(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, target: at('C'), amount, maxRoutes })
    for (const amount of [10n, 50n, 101n]) for (const max of [1, 2]) expect(first(amount, max)).toEqual(routes(amount).slice(0, max))
  })

  test('a closed channel is no route, and channels whose forwarding side put in too little are skipped', async () => {
    const net = new Network(['A', 'B', 'C'])
    const ab = await net.open('A', 'B', 100n, 0n)
    await net.open('B', 'C', 5n, 100n)
    const at = (n: string) => net.node(n).address
    expect(findRoutes(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, target: at('C'), amount: 20n })).toEqual([])
    expect(findRoutes(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, target: at('C'), amount: 5n })).toEqual([[at('B'), at('C')]])
    await net.dispatch('A', { type: 'closeChannel', tokenNetwork: net.chain.tokenNetwork, channelId: ab })
    await net.mine(1)
    expect(findRoutes(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, target: at('C'), amount: 5n })).toEqual([])
  })
})

describe('findRoutes with the lock timeout of the payment', () => {
  /**
   * A new user's node A (reveal 50, channels settling in 500) next to a devnet whose channels settle in 40:
   * A-B-C over the devnet's B-C, A-D-E-C over channels settling in 200.
   */
  async function newUser() {
    const net = new Network(['A', 'B', 'C', 'D', 'E'])
    await net.open('A', 'B', 100n, 0n, 500n, 50n)
    await net.open('B', 'C', 100n, 0n, 40n, 10n)
    await net.open('A', 'D', 100n, 0n, 500n, 50n)
    await net.open('D', 'E', 100n, 0n, 200n, 10n)
    await net.open('E', 'C', 100n, 0n, 200n, 10n)
    const at = (n: string) => net.node(n).address
    const routes = (lockTimeout?: bigint | 'default') =>
      findRoutes(net.node('A').state, {
        tokenNetwork: net.chain.tokenNetwork,
        target: at('C'),
        amount: 10n,
        ...(lockTimeout !== undefined ? { lockTimeout } : {}),
      })
    return { net, at, routes }
  }

  test('leaves out a route with a channel whose settle timeout is shorter than the lock timeout', async () => {
    const { at, routes } = await newUser()
    expect(routes()).toEqual([
      [at('B'), at('C')],
      [at('D'), at('E'), at('C')],
    ])
    expect(routes(100n)).toEqual([[at('D'), at('E'), at('C')]])
    // The default: twice the reveal timeout of our channel with the first hop (here 2 × 50).
    expect(routes('default')).toEqual([[at('D'), at('E'), at('C')]])
    expect(routes(40n)).toEqual([])
    expect(routes(200n)).toEqual([[at('D'), at('E'), at('C')]])
    expect(routes(201n)).toEqual([])
  })

  test('our own channel must hold the lock too: more than its reveal timeout left on arrival, within its settle timeout', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 0n, 100n, 10n)
    const at = (n: string) => net.node(n).address
    const routes = (lockTimeout: bigint) => findRoutes(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, target: at('B'), amount: 10n, lockTimeout })
    expect(routes(11n)).toEqual([])
    expect(routes(12n)).toEqual([[at('B')]])
    expect(routes(100n)).toEqual([[at('B')]])
    expect(routes(101n)).toEqual([])
  })

  test('a channel whose settle timeout the state does not know (stored before it was kept) does not exclude a route', async () => {
    const { net, at, routes } = await newUser()
    for (const c of Object.values(net.node('A').state.tokenNetworks[net.chain.tokenNetwork]!.graph)) delete c.settleTimeout
    expect(routes(100n)).toEqual([
      [at('B'), at('C')],
      [at('D'), at('E'), at('C')],
    ])
  })

  test('finds the route that holds the lock even when shorter ones that cannot come first', async () => {
    const net = new Network(['A', 'B', 'C', 'D', 'E', 'F'])
    await net.open('A', 'B', 100n, 0n, 500n, 50n)
    await net.open('B', 'C', 100n, 0n, 40n, 10n)
    await net.open('A', 'D', 100n, 0n, 500n, 50n)
    await net.open('D', 'C', 100n, 0n, 40n, 10n)
    await net.open('A', 'E', 100n, 0n, 500n, 50n)
    await net.open('E', 'C', 100n, 0n, 40n, 10n)
    await net.open('E', 'F', 100n, 0n, 300n, 10n)
    await net.open('F', 'C', 100n, 0n, 300n, 10n)
    const at = (n: string) => net.node(n).address
    const find = (lockTimeout?: bigint) =>
      findRoutes(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, target: at('C'), amount: 10n, ...(lockTimeout ? { lockTimeout } : {}) })
    expect(find()).toHaveLength(3)
    expect(find().every((r) => r.length === 2)).toBe(true)
    expect(find(100n)).toEqual([[at('E'), at('F'), at('C')]])
  })

  test('whyNoRouteHoldsLock says which settle timeout is too short, only when routes exist that cannot hold the lock', async () => {
    const { net, at } = await newUser()
    const state = net.node('A').state
    const ask = (target: string, lockTimeout: bigint | 'default') =>
      whyNoRouteHoldsLock(state, { tokenNetwork: net.chain.tokenNetwork, target: at(target), amount: 10n, lockTimeout })
    // D-E-C holds a 100-block lock: nothing to explain.
    expect(ask('C', 100n)).toBeUndefined()
    expect(ask('C', 'default')).toBeUndefined()
    const why = ask('C', 300n)!
    expect(why).toMatch(/^no route can hold the payment's lock: via /)
    expect(why).toContain(
      `via ${at('B')}, ${at('C')}: the lock timeout 300 exceeds the settle timeout 40 of the channel between ${at('B')} and ${at('C')} (no lock timeout fits this route unless the reveal timeout of our channel with ${at('B')} is at most 38)`,
    )
    expect(why).toContain(
      `via ${at('D')}, ${at('E')}, ${at('C')}: the lock timeout 300 exceeds the settle timeout 200 of the channel between ${at('D')} and ${at('E')} (a lock timeout from 52 to 200 fits this route)`,
    )
    // No route at all (too much to carry) is not a lock timeout's fault.
    expect(whyNoRouteHoldsLock(state, { tokenNetwork: net.chain.tokenNetwork, target: at('C'), amount: 1000n, lockTimeout: 'default' })).toBeUndefined()
  })
})
