import { describe, expect, test } from 'vitest'
import { balance } from '../../../../src/protocol/channel/amounts.ts'
import { channelWith } from '../../../../src/protocol/state/access.ts'
import { Network } from '../support/network.ts'

const channelOf = (net: Network, a: string, b: string) => channelWith(net.node(a).state, net.chain.tokenNetwork, net.node(b).address)!

describe('direct payment', () => {
  test('moves the amount from the initiator to its partner, and both see the same channel', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 50n)
    await net.pay('A', 'B', 30n, 1n)
    await net.deliverAll()
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentSuccess', amount: 30n }])
    expect(net.node('B').events.filter((e) => e.type === 'paymentReceivedSuccess')).toMatchObject([{ amount: 30n, paymentId: 1n }])
    const ab = channelOf(net, 'A', 'B')
    const ba = channelOf(net, 'B', 'A')
    expect(balance(ab.our, ab.partnerEnd)).toBe(70n)
    expect(balance(ba.our, ba.partnerEnd)).toBe(80n)
    expect(ab.our.balanceProof).toMatchObject({ transferredAmount: 30n, lockedAmount: 0n })
    expect(ba.partnerEnd.balanceProof).toMatchObject({ transferredAmount: 30n, lockedAmount: 0n, nonce: 2n })
    expect(net.node('A').state.initiators).toEqual({})
    expect(net.node('B').state.targets).toEqual({})
  })

  test('fails at once when the channel lacks the balance', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 10n, 0n)
    await net.pay('A', 'B', 11n, 1n)
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentFailed' }])
    expect((net.outcomes('A', 1n)[0] as { reason: string }).reason).toMatch(/insufficient balance/)
    expect(net.inFlight).toHaveLength(0)
  })

  test('the lock expires and the funds come back when the target never claims', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 0n)
    net.node('B').online = false
    await net.pay('A', 'B', 40n, 7n)
    expect(balance(channelOf(net, 'A', 'B').our, channelOf(net, 'A', 'B').partnerEnd)).toBe(100n)
    await net.mine(30)
    expect(net.outcomes('A', 7n)).toMatchObject([{ type: 'paymentSentFailed' }])
    net.node('B').online = true
    await net.mine(1)
    await net.deliverAll()
    const ab = channelOf(net, 'A', 'B')
    expect(ab.our.locks).toEqual([])
    expect(channelOf(net, 'B', 'A').partnerEnd.locks).toEqual([])
    expect(channelOf(net, 'B', 'A').partnerEnd.nonce).toBe(2n)
  })
})

describe('mediated payment', () => {
  test('A pays C through B; every channel ends consistent on both sides', async () => {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 0n)
    await net.open('B', 'C', 100n, 0n)
    await net.pay('A', 'C', 25n, 9n, [['B', 'C']])
    await net.deliverAll()
    expect(net.outcomes('A', 9n)).toMatchObject([{ type: 'paymentSentSuccess' }])
    expect(net.node('C').events.find((e) => e.type === 'paymentReceivedSuccess')).toMatchObject({ amount: 25n })
    expect(net.node('B').events.find((e) => e.type === 'mediationSucceeded')).toBeTruthy()
    expect(balance(channelOf(net, 'A', 'B').our, channelOf(net, 'A', 'B').partnerEnd)).toBe(75n)
    expect(balance(channelOf(net, 'B', 'C').our, channelOf(net, 'B', 'C').partnerEnd)).toBe(75n)
    expect(net.node('B').state.mediators).toEqual({})
  })

  test('a mediator without capacity gives the lock back and the initiator takes the next route', async () => {
    const net = new Network(['A', 'B', 'C', 'D'])
    // B needs its own balance towards A to give a lock back (a RefundTransfer is a lock from B to A).
    await net.open('A', 'B', 100n, 50n)
    await net.open('B', 'C', 5n, 0n)
    await net.open('A', 'D', 100n, 0n)
    await net.open('D', 'C', 100n, 0n)
    await net.pay('A', 'C', 20n, 3n, [
      ['B', 'C'],
      ['D', 'C'],
    ])
    await net.deliverAll()
    expect(net.outcomes('A', 3n)).toMatchObject([{ type: 'paymentSentSuccess', route: [net.node('D').address, net.node('C').address] }])
    expect(net.node('C').events.find((e) => e.type === 'paymentReceivedSuccess')).toMatchObject({ amount: 20n })
    // The refunded lock pair between A and B expires and both sides drop it.
    await net.mine(40)
    await net.deliverAll()
    expect(channelOf(net, 'A', 'B').our.locks).toEqual([])
    expect(channelOf(net, 'A', 'B').partnerEnd.locks).toEqual([])
    expect(channelOf(net, 'B', 'A').our.locks).toEqual([])
    expect(net.node('B').state.mediators).toEqual({})
    expect(net.violations).toEqual([])
  })
})
