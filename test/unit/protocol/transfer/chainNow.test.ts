import { describe, expect, test } from 'vitest'
import type { Message, Signed } from '../../../../src/protocol/messages/types.ts'
import { channelWith } from '../../../../src/protocol/state/access.ts'
import type { NodeEvent } from '../../../../src/protocol/state/effects.ts'
import { Network } from '../support/network.ts'

/**
 * A lock's time counts from the chain's head as the shell saw it when the node's synced block lags (docs/decisions/
 * 0056): `headBlock` in initPayment and in a received lock's change. `net.stall` makes a node's sync lag; the Network
 * passes the head by default, and `{}` for a shell that passes nothing (what every node did before).
 */
const sentOf = <T extends Message['type']>(net: Network, name: string, type: T) =>
  net
    .node(name)
    .sent.map((s) => s.message)
    .filter((m): m is Extract<Signed<Message>, { type: T }> => m.type === type)
const reason = (e: NodeEvent | undefined) => (e && 'reason' in e ? e.reason : undefined)

async function pair() {
  const net = new Network(['A', 'B'])
  await net.open('A', 'B', 100n, 0n, 100n, 10n)
  return net
}

describe('the payer', () => {
  test('behind the chain, locks from its head: the payee asks for the secret and is paid', async () => {
    const net = await pair()
    await net.stall('A', true)
    await net.mine(15)
    expect(net.chain.block - net.node('A').state.blockNumber).toBe(15n)
    await net.pay('A', 'B', 10n, 1n)
    const [lock] = sentOf(net, 'A', 'LockedTransfer')
    // Twice the reveal timeout, from the head: 19 blocks left where the payee stands.
    expect(lock!.lock.expiration).toBe(net.chain.block + 19n)
    await net.deliverAll()
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentSuccess' }])
    expect(net.violations).toEqual([])
  })

  test('counting from its stale block instead, sends a lock its payee finds too close to expiry (what the rule prevents)', async () => {
    const net = await pair()
    net.chainSeen = () => ({})
    await net.stall('A', true)
    await net.mine(15)
    await net.pay('A', 'B', 10n, 1n)
    await net.deliverAll()
    expect(sentOf(net, 'B', 'SecretRequest')).toEqual([])
    expect(net.violations).toEqual([expect.stringMatching(/^A sent a lock with 4 blocks left, within the reveal timeout 10/)])
  })
})

describe('the target', () => {
  test('behind the chain, judges the time a lock has left from the head: in its danger zone it does not ask for the secret', async () => {
    const net = await pair()
    // A payer that counts from a stale block (an older node) and a target as far behind.
    net.chainSeen = (name) => (name === 'A' ? {} : { headBlock: net.chain.block })
    for (const n of ['A', 'B']) await net.stall(n, true)
    await net.mine(15)
    await net.pay('A', 'B', 10n, 1n)
    await net.deliverAll()
    // 4 blocks left at the chain's head: the lock is left to expire rather than the secret revealed too late to claim.
    expect(sentOf(net, 'B', 'SecretRequest')).toEqual([])
    expect(net.node('B').state.targets[Object.keys(net.node('B').state.targets)[0] as `0x${string}`]).toMatchObject({ state: 'secret_request' })
    expect(net.violations.filter((v) => v.startsWith('B'))).toEqual([])
  })

  test('behind the chain, takes a lock that expires a whole settle timeout from the head (from its stale block it looks too far off)', async () => {
    const net = await pair()
    await net.stall('B', true)
    await net.mine(20)
    await net.pay('A', 'B', 10n, 1n, undefined, 100n)
    await net.deliverAll()
    expect(net.node('B').events.filter((e) => e.type === 'messageRejected')).toEqual([])
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentSuccess' }])

    const old = await pair()
    old.chainSeen = (name) => (name === 'B' ? {} : { headBlock: old.chain.block })
    await old.stall('B', true)
    await old.mine(20)
    await old.pay('A', 'B', 10n, 1n, undefined, 100n)
    await old.deliverAll()
    expect(old.node('B').events).toContainEqual(expect.objectContaining({ type: 'messageRejected', reason: 'lock expiration beyond the settle timeout' }))
  })
})

describe('the mediator', () => {
  /** A pays C through B with a 30-block lock; C learns the secret and is about to reveal it to B, behind the chain by 12 blocks. */
  async function revealToLaggingMediator(net: Network) {
    await net.open('A', 'B', 100n, 100n, 100n, 10n)
    await net.open('B', 'C', 100n, 0n, 100n, 10n)
    // B wants 20 blocks to claim A's lock on-chain.
    const ba = channelWith(net.node('B').state, net.chain.tokenNetwork, net.node('A').address)!
    await net.dispatch('B', { type: 'setRevealTimeout', tokenNetwork: ba.tokenNetwork, channelId: ba.id, revealTimeout: 20n })
    await net.pay('A', 'C', 10n, 1n, [['B', 'C']], 30n)
    for (const [from, to, type] of [
      ['A', 'B', 'LockedTransfer'],
      ['B', 'C', 'LockedTransfer'],
      ['C', 'A', 'SecretRequest'],
      ['A', 'C', 'RevealSecret'],
    ] as const)
      expect(await net.deliverMessage(from, to, type), `${from}→${to} ${type}`).toBe(true)
    await net.stall('B', true)
    await net.mine(12)
    expect(await net.deliverMessage('C', 'B', 'RevealSecret')).toBe(true)
  }

  test('behind the chain, pays its payee only while the payer’s lock is safe from the head: else it registers the secret', async () => {
    const net = new Network(['A', 'B', 'C'])
    await revealToLaggingMediator(net)
    // 17 blocks left from the head, not more than its 20: the secret goes on-chain, no Unlock to C yet.
    expect(sentOf(net, 'B', 'Unlock')).toEqual([])
    expect(net.node('B').transactions).toMatchObject([{ type: 'registerSecret' }])

    const old = new Network(['A', 'B', 'C'])
    old.chainSeen = (name) => (name === 'B' ? {} : { headBlock: old.chain.block })
    await revealToLaggingMediator(old)
    // From its stale block, 29 left: it would have paid C and counted on A's Unlock with too little time to claim.
    expect(sentOf(old, 'B', 'Unlock')).toHaveLength(1)
    expect(old.node('B').transactions).toEqual([])
  })

  async function line() {
    const net = new Network(['A', 'B', 'C'])
    await net.open('A', 'B', 100n, 100n, 100n, 10n)
    await net.open('B', 'C', 100n, 0n, 100n, 10n)
    return net
  }

  test('out of reach of the chain, forwards no lock: it gives it back at once, and its payer fails the payment saying so', async () => {
    const net = await line()
    net.unreachable.add('B')
    await net.pay('A', 'C', 10n, 1n, [['B', 'C']])
    await net.deliverAll()
    expect(sentOf(net, 'B', 'LockedTransfer')).toEqual([])
    expect(sentOf(net, 'B', 'RefundTransfer')).toHaveLength(1)
    expect(reason(net.outcomes('A', 1n)[0])).toMatch(new RegExp(`${net.node('B').address} refunded it`))
    // In reach again, it forwards.
    net.unreachable.delete('B')
    await net.pay('A', 'C', 10n, 2n, [['B', 'C']])
    await net.deliverAll()
    expect(net.outcomes('A', 2n)).toMatchObject([{ type: 'paymentSentSuccess' }])
    expect(net.violations).toEqual([])
  })

  test('behind the chain, judges the time left from the head: a lock within its reveal timeout towards the payee is given back', async () => {
    const net = await line()
    // B wants 15 blocks to claim a lock from A on-chain: A's 14-block lock has 13 left, too few to forward.
    const bc = channelWith(net.node('B').state, net.chain.tokenNetwork, net.node('C').address)!
    await net.dispatch('B', { type: 'setRevealTimeout', tokenNetwork: bc.tokenNetwork, channelId: bc.id, revealTimeout: 15n })
    await net.stall('B', true)
    await net.mine(5)
    await net.pay('A', 'C', 10n, 1n, [['B', 'C']], 14n)
    await net.deliverAll()
    expect(sentOf(net, 'B', 'LockedTransfer')).toEqual([])
    expect(sentOf(net, 'B', 'RefundTransfer')).toHaveLength(1)
    expect(net.violations).toEqual([])

    // From its stale block (18 left) it would have forwarded it into C's danger zone.
    const old = await line()
    old.chainSeen = (name) => (name === 'B' ? {} : { headBlock: old.chain.block })
    const oldBc = channelWith(old.node('B').state, old.chain.tokenNetwork, old.node('C').address)!
    await old.dispatch('B', { type: 'setRevealTimeout', tokenNetwork: oldBc.tokenNetwork, channelId: oldBc.id, revealTimeout: 15n })
    await old.stall('B', true)
    await old.mine(5)
    await old.pay('A', 'C', 10n, 1n, [['B', 'C']], 14n)
    await old.deliverAll()
    expect(old.violations).toEqual([expect.stringMatching(/^B sent a lock with 13 blocks left, within the reveal timeout 15/)])
  })
})
