import { expect, test } from 'vitest'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  ChannelState,
  MAX_UINT256,
  blockNumber,
  channelInfo,
  closeChannel,
  openChannel,
  openFundedChannel,
  participantInfo,
  sendTokenNetwork,
  signWithdraw,
  simulateTokenNetwork,
  tokenBalance,
  tokenNetworkEvents,
  withdraw,
  withdrawInput,
  type ChainFixture,
  type Party,
  type WithdrawInput,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let A: Party, B: Party, C: Party
let channel: bigint
useChain(
  { channel: [100n, 50n] },
  (t) =>
    ({
      fx,
      channel,
      parties: [A, B, C],
    } = t),
)

const simulateCoop = (d1: WithdrawInput, d2: WithdrawInput, id = channel, sender: Party = C) =>
  simulateTokenNetwork(fx, sender, 'cooperativeSettle', [id, d1, d2])
/** A side that takes nothing needs no signatures. */
const nothingFor = (p: Party): WithdrawInput => ({
  participant: p.address,
  total_withdraw: 0n,
  expiration_block: 0n,
  participant_signature: '0x',
  partner_signature: '0x',
})

test('invariant 17: a third party can settle cooperatively: both get their signed totals, ChannelSettled has zero locksroots, the channel is gone', async () => {
  const aBefore = await tokenBalance(fx, A.address)
  const bBefore = await tokenBalance(fx, B.address)
  const d1 = await withdrawInput(fx, channel, A, B, 70n)
  const d2 = await withdrawInput(fx, channel, B, A, 80n)
  const receipt = await sendTokenNetwork(fx, C, 'cooperativeSettle', [channel, d1, d2])
  expect(tokenNetworkEvents(receipt, 'ChannelSettled')[0]!.args).toEqual({
    channel_identifier: channel,
    participant1: A.address,
    participant1_amount: 70n,
    participant1_locksroot: `0x${'00'.repeat(32)}`,
    participant2: B.address,
    participant2_amount: 80n,
    participant2_locksroot: `0x${'00'.repeat(32)}`,
  })
  // Each side's payout goes through the withdraw rules, with its ChannelWithdraw event.
  expect(tokenNetworkEvents(receipt, 'ChannelWithdraw').map((e) => e.args.total_withdraw)).toEqual([70n, 80n])
  expect(await tokenBalance(fx, A.address)).toBe(aBefore + 70n)
  expect(await tokenBalance(fx, B.address)).toBe(bBefore + 80n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(0n)
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.Removed })
  expect(
    await fx.controller.client.readContract({
      address: fx.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'getChannelIdentifier',
      args: [A.address, B.address],
    }),
  ).toBe(0n)
  expect((await participantInfo(fx, channel, A.address, B.address)).deposit).toBe(0n)
  // The pair may open again, with a new id.
  expect(await openChannel(fx, A, B)).toBe(channel + 1n)
})

test('invariant 17: the totals must add up to the whole deposit, no more and no less', async () => {
  await expectRevert(
    simulateCoop(await withdrawInput(fx, channel, A, B, 70n), await withdrawInput(fx, channel, B, A, 79n)),
    'TN/coopSettle: incomplete amounts',
  )
  await expectRevert(
    simulateCoop(await withdrawInput(fx, channel, A, B, 70n), await withdrawInput(fx, channel, B, A, 81n)),
    'TN/coopSettle: incomplete amounts',
  )
})

test('invariant 17: a side getting 0 is skipped and needs no signature', async () => {
  const bBefore = await tokenBalance(fx, B.address)
  const receipt = await sendTokenNetwork(fx, C, 'cooperativeSettle', [channel, nothingFor(A), await withdrawInput(fx, channel, B, A, 150n)])
  expect(tokenNetworkEvents(receipt, 'ChannelWithdraw')).toHaveLength(1)
  expect(await tokenBalance(fx, B.address)).toBe(bBefore + 150n)
})

test('invariant 17: the withdraw signatures are checked (type 3, both participants)', async () => {
  const d1 = await withdrawInput(fx, channel, A, B, 70n)
  const d2 = await withdrawInput(fx, channel, B, A, 80n)
  await expectRevert(simulateCoop({ ...d1, participant_signature: d1.partner_signature }, d2), 'TN/withdraw: invalid participant sig')
  await expectRevert(simulateCoop(d1, { ...d2, participant_signature: d1.participant_signature }), 'TN/withdraw: invalid participant sig')
  const foreign = await signWithdraw(fx, C, { channelId: channel, participant: A.address, totalWithdraw: 70n, expiration: d1.expiration_block })
  await expectRevert(simulateCoop({ ...d1, partner_signature: foreign }, d2), 'TN/withdraw: channel id mismatch')
})

test('an expired withdraw signature stops the cooperative settle', async () => {
  const now = await blockNumber(fx)
  await expectRevert(simulateCoop(await withdrawInput(fx, channel, A, B, 70n, now), await withdrawInput(fx, channel, B, A, 80n)), 'TN/withdraw: expired')
})

test('the totals count earlier withdraws: after A withdrew 20, totals 70 + 80 still settle and A gets the remaining 50', async () => {
  await withdraw(fx, channel, A, B, 20n)
  const aBefore = await tokenBalance(fx, A.address)
  await sendTokenNetwork(fx, C, 'cooperativeSettle', [channel, await withdrawInput(fx, channel, A, B, 70n), await withdrawInput(fx, channel, B, A, 80n)])
  expect(await tokenBalance(fx, A.address)).toBe(aBefore + 50n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(0n)
})

test('a cooperative settle naming another pair, or the same participant twice, is refused', async () => {
  await openChannel(fx, A, C)
  await expectRevert(
    simulateCoop(await withdrawInput(fx, channel, A, C, 70n), await withdrawInput(fx, channel, C, A, 80n)),
    'TN/coopSettle: channel id mismatch',
  )
  await expectRevert(simulateCoop(await withdrawInput(fx, channel, A, B, 70n), await withdrawInput(fx, channel, A, B, 80n)), 'TN: identical addresses')
})

test('totals whose sum overflows uint256 panic (0x11), as in 0.40', async () => {
  await expectRevert(simulateCoop(await withdrawInput(fx, channel, A, B, MAX_UINT256), await withdrawInput(fx, channel, B, A, 1n)), { panic: 0x11 })
})

test('a closed channel cannot be settled cooperatively', async () => {
  const d1 = await withdrawInput(fx, channel, A, B, 70n)
  const d2 = await withdrawInput(fx, channel, B, A, 80n)
  await closeChannel(fx, channel, A, B)
  await expectRevert(simulateCoop(d1, d2), 'TN: channel not open')
})

test("invariant 9: cooperative settle signatures for a channel are refused on the pair's reopened channel", async () => {
  const d1 = await withdrawInput(fx, channel, A, B, 70n)
  const d2 = await withdrawInput(fx, channel, B, A, 80n)
  await sendTokenNetwork(fx, C, 'cooperativeSettle', [channel, d1, d2])
  const reopened = await openFundedChannel(fx, A, B, 100n, 50n)
  await expectRevert(simulateCoop(d1, d2, reopened), 'TN/withdraw: invalid participant sig')
})
