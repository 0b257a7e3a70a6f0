import { describe, expect, test } from 'vitest'
import { balance } from '../../../../src/protocol/channel/amounts.ts'
import { amountWithoutFees, feeMargin, routeAmountWithFees, type MediationFees } from '../../../../src/protocol/fees/index.ts'
import { channelWith } from '../../../../src/protocol/state/access.ts'
import type { NodeEvent } from '../../../../src/protocol/state/effects.ts'
import { mediationChannels } from '../../../../src/protocol/transfer/feeViews.ts'
import { Network } from '../support/network.ts'

// A mediator charges its schedule (docs/decisions/0069); the initiator adds the route's estimated fee and Raiden's
// margin, never more than its maxFee; the target gets what arrives; each side's events say what it paid or kept.

const channelOf = (net: Network, a: string, b: string) => channelWith(net.node(a).state, net.chain.tokenNetwork, net.node(b).address)!
/** What `a` holds in its channel with `b`, locks not subtracted. */
const held = (net: Network, a: string, b: string) => {
  const c = channelOf(net, a, b)
  return balance(c.our, c.partnerEnd)
}
const eventsOf = <T extends NodeEvent['type']>(net: Network, name: string, type: T) =>
  net.node(name).events.filter((e): e is Extract<NodeEvent, { type: T }> => e.type === type)
const sentTypes = (net: Network, name: string) => net.node(name).sent.map((s) => s.message.type)

/** B charges 10 flat and 1 % per mediation of the network's token; `refunds`: B can give a lock back to A. */
async function line(fees: Partial<MediationFees['tokens'][string]> = { flat: 10n, proportional: 10_000n }, refunds = 0n) {
  const net = new Network(['A', 'B', 'C'])
  await net.open('A', 'B', 5000n, refunds)
  await net.open('B', 'C', 5000n, 0n)
  const token = net.chain.token.toLowerCase()
  await net.dispatch('B', { type: 'setMediationFees', fees: { capFees: true, tokens: { [token]: { flat: 0n, proportional: 0n, imbalance: 0n, ...fees } } } })
  return net
}

/** The fee B's schedule takes from what reaches C, as a pathfinding service works it out from B's channels. */
const estimateOf = (net: Network, amount: bigint) => {
  const b = net.node('B').state
  return routeAmountWithFees(amount, [mediationChannels(b, channelOf(net, 'B', 'A'), channelOf(net, 'B', 'C'))])!.fees[0]!
}

describe('a mediated payment with fees', () => {
  test('the initiator locks amount, fee and margin; the mediator keeps its fee; the target gets the rest; nothing is lost', async () => {
    const net = await line()
    const fee = estimateOf(net, 1000n)
    // 10 flat, and 1 % of what goes out on the two channels' shares (q / (q + 2) each).
    expect(fee).toBe(20n)
    const locked = 1000n + fee + feeMargin(1000n, fee)
    expect(locked).toBe(1000n + 20n + 2n)
    const forwarded = amountWithoutFees(locked, mediationChannels(net.node('B').state, channelOf(net, 'B', 'A'), channelOf(net, 'B', 'C')))!
    await net.pay('A', 'C', 1000n, 1n, [['B', 'C']], undefined, { routeFees: [fee], maxFee: 100n })
    await net.deliverAll()

    expect(eventsOf(net, 'A', 'paymentSentSuccess')).toMatchObject([{ amount: 1000n, fee: locked - 1000n }])
    const [mediated] = eventsOf(net, 'B', 'mediationSucceeded')
    const [received] = eventsOf(net, 'C', 'paymentReceivedSuccess')
    expect(mediated).toMatchObject({ amount: locked, paymentId: 1n, initiator: net.node('A').address, target: net.node('C').address })
    // What arrives is what B forwarded: the amount and what the margin left over.
    expect(received!.amount).toBe(forwarded)
    expect(received!.amount).toBeGreaterThanOrEqual(1000n)
    expect(mediated!.fee + received!.amount).toBe(locked)
    // What each holds now says the same.
    expect(held(net, 'A', 'B')).toBe(5000n - locked)
    expect(held(net, 'B', 'A') + held(net, 'B', 'C')).toBe(5000n + mediated!.fee)
    expect(held(net, 'C', 'B')).toBe(received!.amount)
  })

  test('a route whose fee and margin exceed maxFee is not taken: the payment fails at once, nothing locked', async () => {
    const net = await line()
    const fee = estimateOf(net, 1000n)
    await net.pay('A', 'C', 1000n, 1n, [['B', 'C']], undefined, { routeFees: [fee], maxFee: fee })
    expect(sentTypes(net, 'A')).toEqual([])
    const [failed] = eventsOf(net, 'A', 'paymentSentFailed')
    expect(failed!.reason).toMatch(/its estimated fee 20 and margin 2 exceed the most the payment may cost in fees, 20 \(--pathfinding-max-fee\)/)
    expect(channelOf(net, 'A', 'B').our.locks).toEqual([])
  })

  test("a direct payment pays no fee, whatever a route's estimate says", async () => {
    const net = await line()
    await net.pay('A', 'B', 100n, 1n, [['B']], undefined, { routeFees: [50n], maxFee: 0n })
    await net.deliverAll()
    expect(eventsOf(net, 'A', 'paymentSentSuccess')).toMatchObject([{ amount: 100n, fee: 0n }])
    expect(held(net, 'B', 'A')).toBe(100n)
  })

  test('fees that take the whole lock: the mediator gives it back at once (RefundTransfer)', async () => {
    const net = await line({ flat: 200n }, 500n)
    await net.pay('A', 'C', 90n, 1n, [['B', 'C']], undefined, { routeFees: [0n], maxFee: 1000n })
    await net.deliverAll()
    expect(sentTypes(net, 'B')).toEqual(['Processed', 'RefundTransfer'])
    expect(eventsOf(net, 'A', 'paymentSentFailed')[0]!.reason).toMatch(/refunded it/)
    expect(net.node('C').sent).toEqual([])
  })

  test('an estimate too low: the target is offered less than the amount, and the initiator fails at once, revealing nothing', async () => {
    const net = await line()
    const start = net.chain.block
    await net.pay('A', 'C', 1000n, 1n, [['B', 'C']], undefined, { maxFee: 100n })
    await net.deliverAll()
    expect(net.chain.block).toBe(start)
    const [failed] = eventsOf(net, 'A', 'paymentSentFailed')
    expect(failed!.reason).toMatch(/^the target was offered 980, less than the amount 1000: the mediators took 20 in fees, more than the 0/)
    expect(sentTypes(net, 'A')).not.toContain('RevealSecret')
    expect(eventsOf(net, 'C', 'paymentReceivedSuccess')).toEqual([])
    // The locks expire and go back: nobody paid anything.
    await net.mine(40)
    await net.deliverAll()
    expect([held(net, 'A', 'B'), held(net, 'B', 'A'), held(net, 'B', 'C'), held(net, 'C', 'B')]).toEqual([5000n, 0n, 5000n, 0n])
    expect(net.node('A').state.initiators).toEqual({})
    expect(net.node('B').state.mediators).toEqual({})
    expect(net.violations).toEqual([])
  })

  test('a mediator with no fees for the token forwards the whole amount, as before', async () => {
    const net = await line({})
    await net.pay('A', 'C', 1000n, 1n, [['B', 'C']], undefined, { maxFee: 0n })
    await net.deliverAll()
    expect(eventsOf(net, 'B', 'mediationSucceeded')).toMatchObject([{ amount: 1000n, fee: 0n }])
    expect(eventsOf(net, 'C', 'paymentReceivedSuccess')).toMatchObject([{ amount: 1000n }])
    expect(eventsOf(net, 'A', 'paymentSentSuccess')).toMatchObject([{ fee: 0n }])
  })

  test('the schedule is what the state holds when the lock comes: the mediator charges the fees set last', async () => {
    const net = await line()
    const token = net.chain.token.toLowerCase()
    await net.dispatch('B', { type: 'setMediationFees', fees: { capFees: true, tokens: { [token]: { flat: 40n, proportional: 0n, imbalance: 0n } } } })
    await net.pay('A', 'C', 1000n, 1n, [['B', 'C']], undefined, { routeFees: [40n], maxFee: 100n })
    await net.deliverAll()
    expect(eventsOf(net, 'B', 'mediationSucceeded')).toMatchObject([{ fee: 40n }])
  })
})
