import type { Address } from 'viem'
import { beforeAll, describe, expect, inject, test } from 'vitest'
import { syncChainEvents } from '../../../src/chain/eventSync.ts'
import { openChannel, setTotalDeposit } from '../../../src/chain/tokenNetworkActions.ts'
import { sendProtocolTransaction } from '../../../src/chain/transactions.ts'
import { pathfindingEventOf, type ChannelEvent } from '../../../src/pathfinding/channel.ts'
import { applyChainEvent, createPathfindingState, networkOf, putChannel } from '../../../src/pathfinding/network.ts'
import { checkUpdate } from '../../../src/pathfinding/updates.ts'
import { signPackedSync } from '../../../src/protocol/signature.ts'
import { packWithdraw } from '../../../src/protocol/withdrawProof.ts'
import { signCapacityUpdate, TestNetwork, testNodes, type TestNode } from '../../support/pathfinding.ts'
import { freshAccount, mint, ownTokenNetwork, type FreshAccount } from '../../support/sharedChain.ts'
import { nativeCurve } from '../../support/curve.ts'

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

describe('the view of a token network', () => {
  test('events of a token network the service does not follow are ignored; a new one is followed from its creation', () => {
    const state = createPathfindingState(1n)
    applyChainEvent(state, opened)
    expect(state.networks.size).toBe(0)
    applyChainEvent(state, { type: 'tokenNetworkCreated', token: c.address, tokenNetwork })
    applyChainEvent(state, opened)
    expect(networkOf(state, tokenNetwork)!.channels.get('7')?.participants[0].address).toBe(a.address)
  })

  test('the index follows the channels: a settled channel leaves its nodes, a reopened one takes a new slot', () => {
    const net = new TestNetwork()
    const first = net.fund(a, b, 10n, 10n)
    const second = net.fund(b, c, 10n, 10n)
    const nodeOf = (n: typeof a) => net.view.nodeOf.get(n.address.toLowerCase())!
    expect(net.view.adjacency[nodeOf(b)]!.map((slot) => net.view.slots[slot]!.channel.channelId)).toEqual([first, second])
    const settled = { participant1Amount: 0n, participant1Locksroot: '0x00', participant2Amount: 0n, participant2Locksroot: '0x00', blockNumber: 9n } as const
    applyChainEvent(net.state, {
      type: 'channelSettled',
      tokenNetwork: net.tokenNetwork,
      channelId: first,
      participant1: a.address,
      participant2: b.address,
      ...settled,
    })
    expect(net.view.channels.has(first.toString())).toBe(false)
    expect(net.view.adjacency[nodeOf(a)]).toEqual([])
    expect(net.view.adjacency[nodeOf(b)]!.map((slot) => net.view.slots[slot]!.channel.channelId)).toEqual([second])
    const again = net.fund(a, b, 5n, 5n)
    expect(net.view.adjacency[nodeOf(a)]!.map((slot) => net.view.slots[slot]!.channel.channelId)).toEqual([again])
    // Putting a record again replaces it in its slot.
    putChannel(net.view, { ...net.channel(again), settleTimeout: 77n })
    expect(net.view.slots[net.view.slotOf.get(again.toString())!]!.channel.settleTimeout).toBe(77n)
    expect(net.view.adjacency[nodeOf(a)]).toHaveLength(1)
  })
})

describe('on the chain: the events of real channels, as the chain layer decodes them', () => {
  const rpcUrl = inject('rpcUrl')
  const deployment = inject('deployment')
  const chainId = BigInt(deployment.chainId)
  let A: FreshAccount
  let B: FreshAccount
  let C: FreshAccount
  let network: Address
  let withB: bigint
  let withC: bigint
  let from: bigint

  beforeAll(async () => {
    ;[A, B, C] = (await Promise.all([0, 1, 2].map(() => freshAccount(rpcUrl)))) as [FreshAccount, FreshAccount, FreshAccount]
    const own = await ownTokenNetwork(A, deployment)
    network = own.tokenNetwork
    from = own.registered.receipt.blockNumber
    await Promise.all([mint(A, own.token, 1_000n), mint(B, own.token, 1_000n)])
    withB = (await openChannel(A.chain, A.queue, { tokenNetwork: network, partner: B.address, settleTimeout: 100n, totalDeposit: 100n })).channelId
    await setTotalDeposit(B.chain, B.queue, { tokenNetwork: network, channelId: withB, partner: A.address, totalDeposit: 40n })
    const expiration = (await A.chain.publicClient.getBlockNumber()) + 50n
    const partnerSignature = signPackedSync(
      nativeCurve,
      B.key,
      packWithdraw({ tokenNetworkAddress: network, chainId, channelIdentifier: withB, participant: A.address, totalWithdraw: 10n, expiration }),
    )
    await sendProtocolTransaction(
      { type: 'setTotalWithdraw', tokenNetwork: network, channelId: withB, participant: A.address, totalWithdraw: 10n, expiration, partnerSignature },
      { signer: A.chain, secretRegistry: deployment.contracts.SecretRegistry.address, queue: A.queue },
    )
    withC = (await openChannel(C.chain, C.queue, { tokenNetwork: network, partner: A.address, settleTimeout: 100n })).channelId
    await sendProtocolTransaction(
      { type: 'close', tokenNetwork: network, channelId: withC, partner: A.address, balanceProof: null },
      { signer: C.chain, secretRegistry: deployment.contracts.SecretRegistry.address, queue: C.queue },
    )
  })

  test('the view holds the deposits and withdrawals the chain holds, the closed channel as closed, and cuts claims to them', async () => {
    const { events } = await syncChainEvents(A.chain.publicClient, {
      contracts: { tokenNetworkRegistry: deployment.contracts.TokenNetworkRegistry.address, secretRegistry: deployment.contracts.SecretRegistry.address },
      tokenNetworks: [network],
      fromBlock: from,
      toBlock: await A.chain.publicClient.getBlockNumber(),
      defaultRevealTimeout: 50n,
    })
    const state = createPathfindingState(chainId)
    for (const { change } of events) {
      const event = pathfindingEventOf(change)
      // Other tests' networks are created in the same blocks: this one is followed.
      if (event && (event.type !== 'tokenNetworkCreated' || event.tokenNetwork === network)) applyChainEvent(state, event)
    }
    const view = networkOf(state, network)!
    const ab = view.channels.get(withB.toString())!
    expect(ab.participants.map((p) => [p.address, p.deposit, p.withdrawn])).toEqual([
      [A.address, 100n, 10n],
      [B.address, 40n, 0n],
    ])
    expect([ab.settleTimeout, ab.closed]).toEqual([100n, false])
    expect(view.channels.get(withC.toString())!.closed).toBe(true)

    // Both claim 500 for each side: the chain holds 130 in the channel, so no direction carries more.
    for (const [who, other] of [
      [A, B],
      [B, A],
    ] as const) {
      const outcome = checkUpdate(
        state,
        signCapacityUpdate(who.key, {
          canonical_identifier: { chain_identifier: chainId, token_network_address: network, channel_identifier: withB },
          updating_participant: who.address,
          other_participant: other.address,
          updating_nonce: 1n,
          other_nonce: 1n,
          updating_capacity: 500n,
          other_capacity: 500n,
          reveal_timeout: 50n,
        }),
        { now: Date.now(), curve: nativeCurve },
      )
      expect(outcome.outcome).toBe('accepted')
      if (outcome.outcome === 'accepted') putChannel(view, outcome.channel)
    }
    expect(view.slots[view.slotOf.get(withB.toString())!]!.capacity).toEqual([130n, 130n])
  })
})
