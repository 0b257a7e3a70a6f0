import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { channelAfterEvent, directionCapacity, type ChannelEvent, type PfsChannel } from '../../../src/pathfinding/channel.ts'
import { applyChainEvent } from '../../../src/pathfinding/network.ts'
import { signCapacityUpdate, TestNetwork, testNodes, type TestNode } from '../../support/pathfinding.ts'

const [a, b, c] = testNodes(3) as [TestNode, TestNode, TestNode]
const tokenNetwork: Address = '0x1111111111111111111111111111111111111111'
const opened: ChannelEvent = {
  type: 'channelOpened',
  tokenNetwork,
  channelId: 7n,
  participant1: a.address,
  participant2: b.address,
  settleTimeout: 500n,
  blockNumber: 10n,
  revealTimeout: 50n,
}

describe('a channel from its chain events', () => {
  test('opened, deposits, withdrawals, closed, settled: each participant keeps its totals', () => {
    let channel = channelAfterEvent(undefined, opened)!
    channel = channelAfterEvent(channel, { type: 'channelDeposit', tokenNetwork, channelId: 7n, participant: a.address, totalDeposit: 100n })!
    channel = channelAfterEvent(channel, { type: 'channelDeposit', tokenNetwork, channelId: 7n, participant: b.address, totalDeposit: 30n })!
    channel = channelAfterEvent(channel, { type: 'channelWithdraw', tokenNetwork, channelId: 7n, participant: a.address, totalWithdraw: 20n })!
    expect(channel.participants.map((p) => [p.address, p.deposit, p.withdrawn])).toEqual([
      [a.address, 100n, 20n],
      [b.address, 30n, 0n],
    ])
    expect(channel.closed).toBe(false)
    channel = channelAfterEvent(channel, {
      type: 'channelClosed',
      tokenNetwork,
      channelId: 7n,
      closer: a.address,
      nonce: 0n,
      balanceHash: '0x00',
      blockNumber: 20n,
    })!
    expect(channel.closed).toBe(true)
    expect(
      channelAfterEvent(channel, {
        type: 'channelSettled',
        tokenNetwork,
        channelId: 7n,
        participant1: a.address,
        participant1Amount: 0n,
        participant1Locksroot: '0x00',
        participant2: b.address,
        participant2Amount: 0n,
        participant2Locksroot: '0x00',
        blockNumber: 30n,
      }),
    ).toBeUndefined()
  })

  test('an event applied again, or an older total after a newer one, changes nothing', () => {
    const deposit = (totalDeposit: bigint): ChannelEvent => ({ type: 'channelDeposit', tokenNetwork, channelId: 7n, participant: a.address, totalDeposit })
    const once = channelAfterEvent(channelAfterEvent(undefined, opened), deposit(100n))!
    expect(channelAfterEvent(once, deposit(100n))).toEqual(once)
    expect(channelAfterEvent(once, deposit(40n))).toEqual(once)
    // A ChannelOpened synced again keeps what the participants announced since.
    const announced: PfsChannel = { ...once, participants: [{ ...once.participants[0], capacityUpdate: undefined }, once.participants[1]] }
    expect(channelAfterEvent(announced, opened)).toBe(announced)
    // Events of a channel the service never saw open, or of a stranger, are no channel.
    expect(channelAfterEvent(undefined, deposit(5n))).toBeUndefined()
    expect(channelAfterEvent(once, { ...deposit(500n), participant: c.address } as ChannelEvent)).toBe(once)
  })
})

describe('what a direction can carry', () => {
  test('nothing until both sides announced, then the smaller of the two claims', () => {
    const net = new TestNetwork()
    const id = net.open(a, b)
    net.deposit(id, a, 100n)
    net.deposit(id, b, 100n)
    const update = (from: typeof a, to: typeof b, nonce: bigint, mine: bigint, theirs: bigint) =>
      net.apply(
        signCapacityUpdate(from.key, {
          canonical_identifier: net.at(id),
          updating_participant: from.address,
          other_participant: to.address,
          updating_nonce: nonce,
          other_nonce: 0n,
          updating_capacity: mine,
          other_capacity: theirs,
          reveal_timeout: 50n,
        }),
      )
    expect(update(a, b, 1n, 90n, 110n).outcome).toBe('accepted')
    // A said it can send 90, B has not spoken: neither direction carries anything.
    expect([directionCapacity(net.channel(id), 0), directionCapacity(net.channel(id), 1)]).toEqual([0n, 0n])
    expect(update(b, a, 1n, 150n, 80n).outcome).toBe('accepted')
    // A claims 90 for itself, B says A has 80; B claims 150, A says B has 110.
    expect([directionCapacity(net.channel(id), 0), directionCapacity(net.channel(id), 1)]).toEqual([80n, 110n])
    expect(net.view.slots[net.view.slotOf.get(id.toString())!]!.capacity).toEqual([80n, 110n])
  })

  test('no more than the chain holds: both may claim more than was deposited, the deposits cut it; a new deposit lifts it', () => {
    const net = new TestNetwork()
    const id = net.open(a, b)
    net.deposit(id, a, 50n)
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const)
      net.apply(
        signCapacityUpdate(from.key, {
          canonical_identifier: net.at(id),
          updating_participant: from.address,
          other_participant: to.address,
          updating_nonce: 1n,
          other_nonce: 1n,
          updating_capacity: 1_000n,
          other_capacity: 1_000n,
          reveal_timeout: 50n,
        }),
      )
    expect(directionCapacity(net.channel(id), 0)).toBe(50n)
    net.deposit(id, b, 25n)
    expect(directionCapacity(net.channel(id), 1)).toBe(75n)
    expect(net.view.slots[net.view.slotOf.get(id.toString())!]!.capacity).toEqual([75n, 75n])
    net.deposit(id, a, 50n) // an older total, repeated: changes nothing
    applyChainEvent(net.state, { type: 'channelWithdraw', tokenNetwork: net.tokenNetwork, channelId: id, participant: a.address, totalWithdraw: 30n })
    expect(directionCapacity(net.channel(id), 0)).toBe(45n)
  })
})
