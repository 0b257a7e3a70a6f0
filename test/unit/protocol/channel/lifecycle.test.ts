import { sha256 } from 'viem'
import { describe, expect, test } from 'vitest'
import { balance } from '../../../../src/protocol/channel/amounts.ts'
import { channelWith } from '../../../../src/protocol/state/access.ts'
import { Network } from '../support/network.ts'

const channelOf = (net: Network, a: string, b: string) => channelWith(net.node(a).state, net.chain.tokenNetwork, net.node(b).address)!
const tokens = (net: Network, name: string) => net.chain.balances.get(net.node(name).address.toLowerCase()) ?? 0n

describe('withdraw', () => {
  test('request, confirmation, and the on-chain withdraw move the tokens out', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 20n)
    await net.dispatch('A', { type: 'withdraw', tokenNetwork: net.chain.tokenNetwork, channelId: id, totalWithdraw: 40n })
    await net.deliverAll()
    expect(net.node('A').transactions).toMatchObject([{ type: 'setTotalWithdraw', totalWithdraw: 40n }])
    // The contract takes a withdraw in a block before its expiration: that block is the transaction's deadline.
    const withdraw = net.node('A').transactions[0] as { expiration: bigint; deadline?: bigint }
    expect(withdraw.deadline).toBe(withdraw.expiration - 1n)
    await net.mine(1)
    expect(tokens(net, 'A')).toBe(40n)
    expect(channelOf(net, 'A', 'B').our).toMatchObject({ withdrawn: 40n, pendingWithdraws: [] })
    expect(channelOf(net, 'B', 'A').partnerEnd).toMatchObject({ withdrawn: 40n, pendingWithdraws: [] })
    expect(balance(channelOf(net, 'A', 'B').our, channelOf(net, 'A', 'B').partnerEnd)).toBe(60n)
  })

  test('a withdraw above the balance is refused, and nothing is sent', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 0n)
    await net.dispatch('A', { type: 'withdraw', tokenNetwork: net.chain.tokenNetwork, channelId: id, totalWithdraw: 101n })
    expect(net.node('A').events.at(-1)).toMatchObject({ type: 'actionRejected', action: 'withdraw' })
    expect(net.inFlight).toEqual([])
  })

  test('a confirmed withdraw that never reaches the chain expires on both sides', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 0n)
    net.node('B').online = false
    await net.dispatch('A', { type: 'withdraw', tokenNetwork: net.chain.tokenNetwork, channelId: id, totalWithdraw: 30n })
    expect(balance(channelOf(net, 'A', 'B').our, channelOf(net, 'A', 'B').partnerEnd)).toBe(70n)
    await net.mine(35)
    expect(net.node('A').events.some((e) => e.type === 'withdrawExpired')).toBe(true)
    expect(channelOf(net, 'A', 'B').our.pendingWithdraws).toEqual([])
    net.node('B').online = true
    await net.deliverAll()
    await net.deliverAll()
    expect(channelOf(net, 'B', 'A').partnerEnd.pendingWithdraws).toEqual([])
    expect(channelOf(net, 'B', 'A').partnerEnd.nonce).toBe(channelOf(net, 'A', 'B').our.nonce)
    // B's confirmation reached A after A had declared the withdraw expired: A still applies its nonce.
    expect(channelOf(net, 'A', 'B').partnerEnd.nonce).toBe(channelOf(net, 'B', 'A').our.nonce)
    expect(channelOf(net, 'B', 'A').our.nonce).toBe(1n)
    expect(balance(channelOf(net, 'A', 'B').our, channelOf(net, 'A', 'B').partnerEnd)).toBe(100n)
  })
})

describe('cooperative settle', () => {
  test('both whole balances are paid out in one transaction and the channel is gone', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 50n)
    await net.pay('A', 'B', 30n, 1n)
    await net.deliverAll()
    await net.dispatch('A', { type: 'coopSettle', tokenNetwork: net.chain.tokenNetwork, channelId: id })
    await net.deliverAll()
    const coop = net.node('A').transactions.at(-1) as { our: { expiration: bigint }; partner: { expiration: bigint }; deadline?: bigint }
    expect(coop).toMatchObject({ type: 'cooperativeSettle', our: { totalWithdraw: 70n }, partner: { totalWithdraw: 80n } })
    expect(coop.deadline).toBe((coop.our.expiration < coop.partner.expiration ? coop.our.expiration : coop.partner.expiration) - 1n)
    await net.mine(1)
    expect(tokens(net, 'A')).toBe(70n)
    expect(tokens(net, 'B')).toBe(80n)
    expect(net.node('A').state.channels).toEqual({})
    expect(net.node('B').state.channels).toEqual({})
  })
})

describe('close, update, settle, unlock', () => {
  test('the partner closes with a stale proof; we update; the settle pays each side exactly', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 100n)
    await net.pay('A', 'B', 10n, 1n)
    await net.deliverAll()
    const staleOfA = channelOf(net, 'B', 'A').partnerEnd.balanceProof!
    expect(staleOfA.transferredAmount).toBe(10n)
    // A pays B 5 more, so A's latest proof says 15; B pays A 7.
    await net.pay('A', 'B', 5n, 2n)
    await net.deliverAll()
    await net.pay('B', 'A', 7n, 3n)
    await net.deliverAll()
    // B closes with an old proof of A's (one that gives B less: it gains nothing, but A must cope).
    net.chain.submit(net.node('B').address, {
      type: 'close',
      tokenNetwork: net.chain.tokenNetwork,
      channelId: id,
      partner: net.node('A').address,
      balanceProof: staleOfA,
    })
    await net.mine(1)
    // A answers the close with B's latest proof (B paid A 7), before B may settle: from the block after the settle block.
    expect(net.node('A').transactions.at(-1)).toMatchObject({ type: 'update', balanceProof: { transferredAmount: 7n } })
    const closed = channelOf(net, 'A', 'B')
    expect(net.node('A').transactions.at(-1)).toMatchObject({ deadline: closed.closedBlock! + closed.settleTimeout })
    await net.mine(1)
    expect(channelOf(net, 'A', 'B').state).toBe('closed')
    await net.mine(100)
    // A's on-chain proof is an old one: A settles with it from the stored history.
    expect(net.node('A').transactions.some((t) => t.type === 'settleWithHistory')).toBe(true)
    await net.mine(1)
    expect(tokens(net, 'A')).toBe(100n - 10n + 7n)
    expect(tokens(net, 'B')).toBe(100n + 10n - 7n)
    expect(net.chain.failures).toEqual([])
    expect(net.node('A').state.channels).toEqual({})
  })

  /** B closes with A's proof of 10 while A holds B's proof of 7: A's update is on its way (in the pool). */
  async function closedWithUpdateOnItsWay() {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 100n, 40n)
    await net.pay('A', 'B', 10n, 1n)
    await net.deliverAll()
    await net.pay('B', 'A', 7n, 2n)
    await net.deliverAll()
    await net.dispatch('B', { type: 'closeChannel', tokenNetwork: net.chain.tokenNetwork, channelId: id })
    await net.mine(1)
    expect(net.node('A').transactions.at(-1)).toMatchObject({ type: 'update', balanceProof: { transferredAmount: 7n } })
    const [update] = net.chain.takePending()
    return { net, id, update: update! }
  }
  const settles = (net: Network, name: string) => net.node(name).transactions.filter((t) => t.type === 'settle' || t.type === 'settleWithHistory')

  test('our update still on its way when the settle window ends: we settle only once it lands, with the proof it carried', async () => {
    const { net, update } = await closedWithUpdateOnItsWay()
    // The window ends before A's update is mined (a slow RPC, a busy mempool): a settle now would carry B's
    // proof as zero while the update is about to set it to 7, and revert.
    await net.mine(45)
    expect(settles(net, 'A')).toEqual([])
    net.chain.submit(update.from, update.tx)
    await net.mine(1)
    expect(settles(net, 'A')).toMatchObject([{ type: 'settle' }])
    await net.mine(1)
    expect(net.chain.failures).toEqual([])
    expect(tokens(net, 'A')).toBe(100n - 10n + 7n)
    expect(tokens(net, 'B')).toBe(100n + 10n - 7n)
  })

  test('our update fails for good: the settle goes on with the proofs the chain holds', async () => {
    const { net, id } = await closedWithUpdateOnItsWay()
    await net.mine(45)
    expect(settles(net, 'A')).toEqual([])
    await net.dispatch('A', { type: 'transactionFailed', transaction: 'update', tokenNetwork: net.chain.tokenNetwork, channelId: id, reason: 'out of gas' })
    await net.mine(1)
    expect(settles(net, 'A')).toHaveLength(1)
    await net.mine(1)
    expect(net.chain.failures).toEqual([])
    // The chain holds B's zero: A gets back only what B's close says.
    expect(tokens(net, 'A')).toBe(100n - 10n)
    expect(tokens(net, 'B')).toBe(100n + 10n)
  })

  test('after settle, locks whose secret was registered in time go to the receiver and the rest come back', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 0n)
    net.node('B').online = false
    const paid = await net.pay('A', 'B', 20n, 1n)
    await net.pay('A', 'B', 30n, 2n)
    net.node('B').online = true
    await net.deliver(0) // B has both locks, nothing else happened
    await net.deliver(0)
    net.inFlight.length = 0
    // B learns one secret out of band and registers it on-chain before expiry.
    const secret = sha256(`0x${1n.toString(16).padStart(64, '0')}`)
    expect(sha256(secret)).toBe(paid)
    net.chain.submit(net.node('B').address, { type: 'registerSecret', secret, secrethash: paid })
    await net.mine(1)
    await net.dispatch('A', { type: 'closeChannel', tokenNetwork: net.chain.tokenNetwork, channelId: id })
    await net.mine(110)
    await net.mine(3)
    expect(tokens(net, 'A')).toBe(80n)
    expect(tokens(net, 'B')).toBe(20n)
    expect(net.chain.failures).toEqual([])
  })

  test('locks of an older proof the chain settled on come back from the stored history when nobody claims them', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 0n)
    net.node('B').online = false
    await net.pay('A', 'B', 20n, 1n)
    await net.pay('A', 'B', 30n, 2n)
    net.node('B').online = true
    await net.deliver(0) // B gets only the first LockedTransfer: the chain will hold that older proof of A's
    net.inFlight.length = 0
    await net.dispatch('B', { type: 'closeChannel', tokenNetwork: net.chain.tokenNetwork, channelId: id })
    await net.mine(130)
    expect(net.node('A').transactions.map((t) => t.type)).toEqual(expect.arrayContaining(['settleWithHistory', 'unlockWithHistory']))
    expect(tokens(net, 'A')).toBe(100n)
    expect(tokens(net, 'B')).toBe(0n)
    expect(net.chain.failures).toEqual([])
    expect(net.node('A').state.channels).toEqual({})
  })
})

describe('secret registration and the resolver', () => {
  test('a target that knows the secret but gets no Unlock registers it before the danger zone', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 0n)
    const h = await net.pay('A', 'B', 10n, 1n)
    await net.deliver(0) // LockedTransfer to B
    await net.deliver(0) // B's Processed to A
    await net.deliver(0) // SecretRequest to A
    await net.deliver(0) // A reveals the secret to B
    net.node('A').online = false // A never receives B's reveal, so it never unlocks
    const expiration = Object.values(net.node('B').state.targets)[0]!.lock.expiration
    await net.mine(12)
    // Claimable on-chain only when registered in a block before the lock's expiration.
    expect(net.node('B').transactions).toContainEqual(expect.objectContaining({ type: 'registerSecret', secrethash: h, deadline: expiration - 1n }))
    await net.mine(1)
    expect(net.chain.secrets.has(h)).toBe(true)
  })

  test('a payment given only a secret hash asks the resolver, then reveals what it answers', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 0n)
    const secret = sha256('0xabcd')
    const secrethash = sha256(secret)
    const r = [[net.node('B').address]]
    await net.dispatch('A', {
      type: 'initPayment',
      tokenNetwork: net.chain.tokenNetwork,
      target: net.node('B').address,
      amount: 10n,
      paymentId: 5n,
      secrethash,
      ownSecret: false,
      routes: r,
      freshSecrets: [],
    })
    await net.deliverAll()
    expect(net.node('A').state.initiators[secrethash]?.awaitingResolver).toBe(true)
    await net.dispatch('A', { type: 'secretResolved', secrethash, secret: sha256('0xbad0') })
    expect(net.node('A').state.initiators[secrethash]?.awaitingResolver).toBe(true)
    await net.dispatch('A', { type: 'secretResolved', secrethash, secret })
    await net.deliverAll()
    expect(net.outcomes('A', 5n)).toMatchObject([{ type: 'paymentSentSuccess', secret }])
  })
})
