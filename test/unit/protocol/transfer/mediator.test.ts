import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { decodeMessage, encodeMessage, signMessage } from '../../../../src/protocol/messages/index.ts'
import type { LockedTransfer } from '../../../../src/protocol/messages/types.ts'
import { channelWith } from '../../../../src/protocol/state/access.ts'
import type { NodeEvent } from '../../../../src/protocol/state/effects.ts'
import { Network } from '../support/network.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const channelOf = (net: Network, a: string, b: string) => channelWith(net.node(a).state, net.chain.tokenNetwork, net.node(b).address)!
const sentTypes = (net: Network, name: string) => net.node(name).sent.map((s) => s.message.type)
const reason = (e: NodeEvent | undefined) => (e && 'reason' in e ? e.reason : undefined)

/** Sets a node's own reveal timeout in one of its channels (each side chooses its own). */
async function revealTimeout(net: Network, node: string, partner: string, blocks: bigint) {
  const c = channelOf(net, node, partner)
  await net.dispatch(node, { type: 'setRevealTimeout', tokenNetwork: c.tokenNetwork, channelId: c.id, revealTimeout: blocks })
  expect(channelOf(net, node, partner).revealTimeout).toBe(blocks)
}

/**
 * After every message was delivered and no block was mined: B answered A's lock with a RefundTransfer at once, and
 * A's payment failed saying that B gave it back.
 */
function expectRefundedAtOnce(net: Network, startBlock: bigint, paymentId = 1n) {
  expect(net.chain.block, 'no block was mined').toBe(startBlock)
  expect(sentTypes(net, 'B')).toEqual(['Processed', 'RefundTransfer'])
  const outcomes = net.outcomes('A', paymentId)
  expect(outcomes).toMatchObject([{ type: 'paymentSentFailed' }])
  expect(reason(outcomes[0])).toMatch(new RegExp(`^no route could carry the payment: ${net.node('B').address} refunded it`))
  // The pair of locks (A's to B, B's refund to A) waits for expiry; the payment is over already.
  expect(channelOf(net, 'A', 'B').our.locks).toHaveLength(1)
  expect(channelOf(net, 'A', 'B').partnerEnd.locks).toHaveLength(1)
}

/** Both locks of a refunded payment expire, each side takes its own back, and no task is left. */
async function expectCleanAfterExpiry(net: Network, names: string[]) {
  await net.mine(40)
  await net.deliverAll()
  for (const a of names) {
    for (const b of names) {
      const c = a !== b ? channelWith(net.node(a).state, net.chain.tokenNetwork, net.node(b).address) : undefined
      if (!c) continue
      expect(c.our.locks, `${a}→${b}`).toEqual([])
      expect(c.partnerEnd.locks, `${b}→${a} seen by ${a}`).toEqual([])
    }
    expect(net.node(a).state.mediators).toEqual({})
    expect(net.node(a).state.initiators).toEqual({})
  }
  expect(net.violations).toEqual([])
}

/** Rewrites A's LockedTransfer in flight to B with another route in its metadata (re-signed by A). */
async function rerouteInFlight(net: Network, route: Address[]) {
  const entry = net.inFlight.find((m) => m.from === 'A' && m.to === 'B')!
  const { message } = await decodeMessage(jsSecp256k1, entry.text, net.node('A').address)
  const changed: LockedTransfer = { ...(message as LockedTransfer), metadata: { routes: [{ route }] } }
  entry.text = encodeMessage(await signMessage(jsSecp256k1, net.node('A').key, changed))
}

describe('a mediator that cannot forward a lock gives it back at once (RefundTransfer), without waiting for its expiry', () => {
  test('too little balance towards the next hop', async () => {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 50n)
    await net.open('B', 'C', 5n, 0n)
    const start = net.chain.block
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    await net.deliverAll()
    expectRefundedAtOnce(net, start)
    expect(net.node('C').sent).toEqual([])
    await expectCleanAfterExpiry(net, ['A', 'B', 'C'])
  })

  test('no channel with the next hop', async () => {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 50n)
    const start = net.chain.block
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    await net.deliverAll()
    expectRefundedAtOnce(net, start)
    await expectCleanAfterExpiry(net, ['A', 'B'])
  })

  test('the channel with the next hop is closed', async () => {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 50n)
    const bc = await net.open('B', 'C', 100n, 0n)
    await net.dispatch('B', { type: 'closeChannel', tokenNetwork: net.chain.tokenNetwork, channelId: bc })
    await net.mine(1)
    expect(channelOf(net, 'B', 'C').state).toBe('closed')
    const start = net.chain.block
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    await net.deliverAll()
    expect(net.chain.block).toBe(start)
    expect(
      net
        .node('B')
        .sent.slice(-2)
        .map((s) => s.message.type),
    ).toEqual(['Processed', 'RefundTransfer'])
    expect(reason(net.outcomes('A', 1n)[0])).toMatch(/^no route could carry the payment: .* refunded it/)
  })

  test('the lock would end within the reveal timeout of the next channel (no reveal timeout is needed to give it back)', async () => {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 50n, 100n, 10n)
    await net.open('B', 'C', 100n, 0n, 100n, 10n)
    // B wants 30 blocks to claim a lock on-chain, in both its channels; A only 10.
    await revealTimeout(net, 'B', 'C', 30n)
    await revealTimeout(net, 'B', 'A', 30n)
    const start = net.chain.block
    // A lock of 25 blocks reaches B with 24 left: enough for A's channel (10), not for B's next one (30).
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']], 25n)
    await net.deliverAll()
    expectRefundedAtOnce(net, start)
    await expectCleanAfterExpiry(net, ['A', 'B', 'C'])
  })

  test('the lock would outlast the settle timeout of the next channel (an initiator that did not know it)', async () => {
    const net = new Network(['A', 'B', 'C'])
    // A new user's channel (settle 500, reveal 50: a 100-block lock) into a devnet's channel (settle 40).
    await net.open('A', 'B', 100n, 50n, 500n, 50n)
    const bc = await net.open('B', 'C', 100n, 0n, 40n, 10n)
    // A state stored before the graph kept settle timeouts: A cannot tell that B-C is too short for its lock.
    const graph = net.node('A').state.tokenNetworks[net.chain.tokenNetwork]!.graph
    delete graph[bc.toString()]!.settleTimeout
    const start = net.chain.block
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    await net.deliverAll()
    expect(net.node('B').sent.filter((s) => s.to === net.node('C').address)).toEqual([])
    expectRefundedAtOnce(net, start)
    await net.mine(110)
    await net.deliverAll()
    expect(channelOf(net, 'A', 'B').our.locks).toEqual([])
    expect(channelOf(net, 'B', 'A').our.locks).toEqual([])
    expect(net.node('B').state.mediators).toEqual({})
  })

  test('the route names no hop after it, or names the payer again', async () => {
    for (const route of [
      ['A', 'B'],
      ['A', 'B', 'A', 'C'],
    ]) {
      const net = new Network(['A', 'B', 'C'])
      await net.open('A', 'B', 100n, 50n)
      await net.open('B', 'C', 100n, 0n)
      const start = net.chain.block
      await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
      await rerouteInFlight(
        net,
        route.map((n) => net.node(n).address),
      )
      await net.deliverAll()
      expectRefundedAtOnce(net, start)
      expect(net.node('C').sent).toEqual([])
    }
  })

  test('a refund from the payee travels on back to the payer at once, and every lock of the route is taken back at expiry', async () => {
    const net = new Network(['A', 'B', 'C', 'D'])
    await net.open('A', 'B', 100n, 50n)
    await net.open('B', 'C', 100n, 50n)
    await net.open('C', 'D', 5n, 0n)
    const start = net.chain.block
    await net.pay('A', 'D', 20n, 1n, [['B', 'C', 'D']])
    await net.deliverAll()
    expect(net.chain.block).toBe(start)
    expect(sentTypes(net, 'C')).toEqual(['Processed', 'RefundTransfer'])
    // B: Processed to A, LockedTransfer to C, Processed for C's refund, refund to A.
    expect(sentTypes(net, 'B')).toEqual(['Processed', 'LockedTransfer', 'Processed', 'RefundTransfer'])
    expect(reason(net.outcomes('A', 1n)[0])).toMatch(new RegExp(`^no route could carry the payment: ${net.node('B').address} refunded it`))
    expect(net.node('B').state.mediators[Object.keys(net.node('B').state.mediators)[0] as `0x${string}`]).toMatchObject({
      payeeState: 'refunded',
      refunded: true,
    })
    await expectCleanAfterExpiry(net, ['A', 'B', 'C', 'D'])
  })

  test('a refund that is not of the lock we sent is not passed on', async () => {
    const net = new Network(['A', 'B', 'C', 'D'])
    await net.open('A', 'B', 100n, 50n)
    await net.open('B', 'C', 100n, 50n)
    await net.open('C', 'D', 5n, 0n)
    await net.pay('A', 'D', 20n, 1n, [['B', 'C', 'D']])
    expect(await net.deliverMessage('A', 'B', 'LockedTransfer')).toBe(true)
    expect(await net.deliverMessage('B', 'C', 'LockedTransfer')).toBe(true)
    const entry = net.inFlight.find((m) => m.from === 'C' && m.to === 'B' && m.text.includes('RefundTransfer'))!
    const { message } = await decodeMessage(jsSecp256k1, entry.text, net.node('C').address)
    entry.text = encodeMessage(
      await signMessage(jsSecp256k1, net.node('C').key, { ...(message as LockedTransfer), type: 'RefundTransfer', payment_identifier: 2n }),
    )
    await net.deliverAll()
    expect(sentTypes(net, 'B')).not.toContain('RefundTransfer')
    expect(net.outcomes('A', 1n)).toEqual([])
  })
})
