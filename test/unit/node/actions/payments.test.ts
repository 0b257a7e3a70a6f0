// The checks a payment passes before it starts (src/node/actions/payments.ts), over a real state built by the
// protocol's network simulator.
import { describe, expect, test } from 'vitest'
import { checkRoute } from '../../../../src/node/actions/payments.ts'
import { Network } from '../../protocol/support/network.ts'

describe('checkRoute', () => {
  test('a route by deposits missing: NO_ROUTE when routing locally; with a pathfinding service (pfs), the payment goes on to ask it', async () => {
    // A-B funded by A; B-C funded by C only: by deposits B cannot forward to C, though balances may have moved since.
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 0n)
    await net.open('B', 'C', 0n, 100n)
    const params = { tokenNetwork: net.chain.tokenNetwork, target: net.node('C').address, amount: 10n }
    expect(() => checkRoute(net.node('A').state, params)).toThrow(expect.objectContaining({ code: 'NO_ROUTE' }))
    expect(() => checkRoute(net.node('A').state, { ...params, askService: true })).not.toThrow()
    // What the service cannot change is still refused at once: our own channels cannot start it.
    expect(() => checkRoute(net.node('A').state, { ...params, amount: 101n, askService: true })).toThrow(
      expect.objectContaining({ code: 'INSUFFICIENT_BALANCE' }),
    )
  })
})
