import { describe, expect, test } from 'vitest'
import { findRoutes } from '../../../../src/protocol/routing/findRoutes.ts'
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
    expect(routes(50n)).toEqual([[at('B'), at('C')], [at('D'), at('E'), at('C')]])
    expect(routes(101n)).toEqual([])
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
