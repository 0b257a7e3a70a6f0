import { describe, expect, test } from 'vitest'
import { routeAmountWithFees } from '../../../../src/protocol/fees/index.ts'
import { channelFeeSchedule } from '../../../../src/protocol/fees/schedule.ts'
import { estimateRouteFee } from '../../../../src/protocol/routing/estimateFee.ts'
import { Network } from '../support/network.ts'

// Without a pathfinding service a node knows no mediator's fees: it guesses that each charges as it does itself
// (docs/decisions/0069), over the channels as the chain shows them.

async function network() {
  const net = new Network(['A', 'B', 'C', 'D'])
  await net.open('A', 'B', 1000n, 300n)
  await net.open('B', 'C', 2000n, 0n)
  await net.open('C', 'D', 1500n, 500n)
  return net
}

const at = (net: Network, n: string) => net.node(n).address

describe("a local route's estimated fee", () => {
  test('nothing when the node charges nothing for the token, and nothing for a direct route', async () => {
    const net = await network()
    const estimate = (route: string[]) =>
      estimateRouteFee(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, route: route.map((n) => at(net, n)), amount: 100n })
    expect(estimate(['B', 'C', 'D'])).toBe(0n)
    const token = net.chain.token.toLowerCase()
    await net.dispatch('A', { type: 'setMediationFees', fees: { capFees: true, tokens: { [token]: { flat: 20n, proportional: 0n, imbalance: 0n } } } })
    expect(estimate(['B'])).toBe(0n)
    // Two mediators, 20 flat each.
    expect(estimate(['B', 'C', 'D'])).toBe(40n)
  })

  test("each mediator charges the node's own schedule over its channels as the chain shows them (ours exactly)", async () => {
    const net = await network()
    const token = net.chain.token.toLowerCase()
    const fees = { capFees: false, tokens: { [token]: { flat: 6n, proportional: 20_000n, imbalance: 10_000n } } }
    await net.dispatch('A', { type: 'setMediationFees', fees })
    // A pays B 100 first: B holds 400 in the channel with A, which only A (and B) know.
    await net.pay('A', 'B', 100n, 1n)
    await net.deliverAll()
    const schedule = (capacity: bigint) => channelFeeSchedule(fees, token, capacity)
    const expected = routeAmountWithFees(250n, [
      { payer: { balance: 400n, receivable: 1000n + 300n - 400n, schedule: schedule(1300n) }, payee: { balance: 2000n, schedule: schedule(2000n) } },
      { payer: { balance: 0n, receivable: 2000n, schedule: schedule(2000n) }, payee: { balance: 1500n, schedule: schedule(2000n) } },
    ])!
    const estimate = estimateRouteFee(net.node('A').state, {
      tokenNetwork: net.chain.tokenNetwork,
      route: ['B', 'C', 'D'].map((n) => at(net, n)),
      amount: 250n,
    })
    expect(estimate).toBe(expected.amount - 250n)
    // Negative: uncapped, the imbalance penalty pays C for taking in tokens on a channel that is all on B's side.
    expect(estimate).toBe(-9n)
  })

  test('nothing when a mediator could not carry it at those fees (no better guess than none)', async () => {
    const net = await network()
    const token = net.chain.token.toLowerCase()
    await net.dispatch('A', { type: 'setMediationFees', fees: { capFees: true, tokens: { [token]: { flat: 20n, proportional: 0n, imbalance: 0n } } } })
    // A can send B 1000 at most: 1490 and two fees of 20 do not come through.
    expect(estimateRouteFee(net.node('A').state, { tokenNetwork: net.chain.tokenNetwork, route: ['B', 'C', 'D'].map((n) => at(net, n)), amount: 1490n })).toBe(
      0n,
    )
  })
})
