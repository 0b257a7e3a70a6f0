import { expect, test } from 'vitest'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { useChain } from '../support/chainSuite.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import {
  DEFAULT_SETTLE_TIMEOUT,
  MAX_UINT256,
  SETTLE_TIMEOUT_MAX,
  SETTLE_TIMEOUT_MIN,
  blockNumber,
  closeChannel,
  deployRaw,
  fakeTokenBytecode,
  openFundedChannel,
  participantInfo,
  passSettleWindow,
  selectors,
  sendTokenNetwork,
  settleChannel,
  settleSide,
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

const args = (w: WithdrawInput, id = channel) =>
  [id, w.participant, w.total_withdraw, w.expiration_block, w.participant_signature, w.partner_signature] as const
const simulateWithdraw = (w: WithdrawInput, id = channel, sender: Party = A) => simulateTokenNetwork(fx, sender, 'setTotalWithdraw', args(w, id))

test('a withdraw signed by both pays the participant, records the total and emits ChannelWithdraw with the total', async () => {
  const before = await tokenBalance(fx, A.address)
  const receipt = await withdraw(fx, channel, A, B, 30n)
  expect(tokenNetworkEvents(receipt, 'ChannelWithdraw')[0]!.args).toEqual({ channel_identifier: channel, participant: A.address, total_withdraw: 30n })
  expect(await tokenBalance(fx, A.address)).toBe(before + 30n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(120n)
  const info = await participantInfo(fx, channel, A.address, B.address)
  expect(info.withdrawnAmount).toBe(30n)
  // The deposit is a lifetime total: a withdraw does not lower it.
  expect(info.deposit).toBe(100n)
})

test('invariant 8: a later, larger total pays only the difference', async () => {
  await withdraw(fx, channel, A, B, 30n)
  const before = await tokenBalance(fx, A.address)
  const receipt = await withdraw(fx, channel, A, B, 45n)
  expect(tokenNetworkEvents(receipt, 'ChannelWithdraw')[0]!.args.total_withdraw).toBe(45n)
  expect(await tokenBalance(fx, A.address)).toBe(before + 15n)
  expect((await participantInfo(fx, channel, A.address, B.address)).withdrawnAmount).toBe(45n)
})

test('anyone can submit a signed withdraw; the tokens still go to the participant', async () => {
  const aBefore = await tokenBalance(fx, A.address)
  const cBefore = await tokenBalance(fx, C.address)
  await withdraw(fx, channel, A, B, 10n, C)
  expect(await tokenBalance(fx, A.address)).toBe(aBefore + 10n)
  expect(await tokenBalance(fx, C.address)).toBe(cBefore)
})

test('setTotalWithdraw2 takes the same withdraw as one WithdrawInput tuple', async () => {
  const w = await withdrawInput(fx, channel, B, A, 20n)
  const receipt = await sendTokenNetwork(fx, C, 'setTotalWithdraw2', [channel, w])
  expect(tokenNetworkEvents(receipt, 'ChannelWithdraw')[0]!.args).toEqual({ channel_identifier: channel, participant: B.address, total_withdraw: 20n })
  await expectRevert(simulateTokenNetwork(fx, C, 'setTotalWithdraw2', [channel + 1n, w]), 'TN: channel not open')
})

test("invariant 8: the contract bounds withdraws by the channel's total deposit only, not by the own deposit", async () => {
  // B deposited 50 but may withdraw 120 if A signs: the off-chain balance is what A vouches for.
  await withdraw(fx, channel, B, A, 120n)
  expect((await participantInfo(fx, channel, B.address, A.address)).withdrawnAmount).toBe(120n)
})

test('invariant 7: a total withdraw of zero is refused', async () => {
  await expectRevert(simulateWithdraw(await withdrawInput(fx, channel, A, B, 0n)), 'TN/withdraw: total withdraw is zero')
})

test('invariant 8: a withdraw is refused from its expiration block on', async () => {
  const now = await blockNumber(fx)
  // eth_call runs in the latest block: expiration == that block is expired, one block later is not.
  await expectRevert(simulateWithdraw(await withdrawInput(fx, channel, A, B, 10n, now)), 'TN/withdraw: expired')
  await expectRevert(simulateWithdraw(await withdrawInput(fx, channel, A, B, 10n, now - 1n)), 'TN/withdraw: expired')
  await simulateWithdraw(await withdrawInput(fx, channel, A, B, 10n, now + 1n))
})

test('invariant 8: a withdraw mined in the block before its expiration works; one mined in the expiration block fails', async () => {
  const now = await blockNumber(fx)
  const tooLate = await withdrawInput(fx, channel, A, B, 10n, now + 1n)
  // The next transaction lands in block now + 1 == expiration: give the gas so it is sent, and see it revert.
  const hash = await A.client.writeContract({
    address: fx.tokenNetwork,
    abi: TokenNetwork.abi,
    functionName: 'setTotalWithdraw',
    args: args(tooLate),
    gas: 300_000n,
  })
  const receipt = await A.client.waitForTransactionReceipt({ hash })
  expect(receipt.blockNumber).toBe(now + 1n)
  expect(receipt.status).toBe('reverted')

  const inTime = await withdrawInput(fx, channel, A, B, 10n, now + 3n)
  const ok = await sendTokenNetwork(fx, A, 'setTotalWithdraw', args(inTime))
  expect(ok.blockNumber).toBe(now + 2n)
})

test("invariant 7: the participant's own signature is required", async () => {
  const w = await withdrawInput(fx, channel, A, B, 10n)
  const message = { channelId: channel, participant: A.address, totalWithdraw: 10n, expiration: w.expiration_block }
  // Signed by the partner twice, by a stranger, or missing the participant's signature.
  await expectRevert(simulateWithdraw({ ...w, participant_signature: w.partner_signature }), 'TN/withdraw: invalid participant sig')
  await expectRevert(simulateWithdraw({ ...w, participant_signature: await signWithdraw(fx, C, message) }), 'TN/withdraw: invalid participant sig')
  // The signatures are over the participant too: naming someone else as participant breaks them.
  await expectRevert(simulateWithdraw({ ...w, participant: B.address }), 'TN/withdraw: invalid participant sig')
})

test("invariant 7: the partner's signature must come from the channel partner", async () => {
  const w = await withdrawInput(fx, channel, A, B, 10n)
  const message = { channelId: channel, participant: A.address, totalWithdraw: 10n, expiration: w.expiration_block }
  await expectRevert(simulateWithdraw({ ...w, partner_signature: await signWithdraw(fx, C, message) }), 'TN/withdraw: channel id mismatch')
  // The participant signing for both sides names itself as partner.
  await expectRevert(simulateWithdraw({ ...w, partner_signature: w.participant_signature }), 'TN: identical addresses')
})

test("invariant 8: the two withdrawn totals together may not exceed the channel's total deposit", async () => {
  await expectRevert(simulateWithdraw(await withdrawInput(fx, channel, A, B, 151n)), 'TN/withdraw: withdraw > deposit')
  await withdraw(fx, channel, B, A, 50n)
  await expectRevert(simulateWithdraw(await withdrawInput(fx, channel, A, B, 101n)), 'TN/withdraw: withdraw > deposit')
  await simulateWithdraw(await withdrawInput(fx, channel, A, B, 100n))
})

test('a signed withdraw can be used only once: the same total again is "amount is zero"', async () => {
  const w = await withdrawInput(fx, channel, A, B, 10n)
  await sendTokenNetwork(fx, A, 'setTotalWithdraw', args(w))
  await expectRevert(simulateWithdraw(w), 'TN/withdraw: amount is zero')
})

test('a total below the amount already withdrawn panics with 0x11 (checked arithmetic, as in 0.40)', async () => {
  await withdraw(fx, channel, A, B, 10n)
  await expectRevert(simulateWithdraw(await withdrawInput(fx, channel, A, B, 9n)), { panic: 0x11 })
})

test("a total that overflows with the partner's withdrawn amount panics with 0x11 before the deposit check", async () => {
  await withdraw(fx, channel, B, A, 1n)
  await expectRevert(simulateWithdraw(await withdrawInput(fx, channel, A, B, MAX_UINT256)), { panic: 0x11 })
})

test('withdraws stop once the channel is closed', async () => {
  const w = await withdrawInput(fx, channel, A, B, 10n)
  await closeChannel(fx, channel, B, A)
  await expectRevert(simulateWithdraw(w), 'TN: channel not open')
  await expectRevert(simulateTokenNetwork(fx, A, 'setTotalWithdraw2', [channel, w]), 'TN: channel not open')
})

test("invariant 9: a withdraw signed for a channel is refused on the pair's reopened channel", async () => {
  const w = await withdrawInput(fx, channel, A, B, 10n)
  await closeChannel(fx, channel, B, A)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A), settleSide(B))
  const reopened = await openFundedChannel(fx, A, B, 100n, 50n)
  expect(reopened).not.toBe(channel)
  await expectRevert(simulateWithdraw(w, reopened), 'TN/withdraw: invalid participant sig')
})

test('a token whose transfer returns false makes the withdraw revert with "TN/withdraw: transfer failed"', async () => {
  // transferFrom answers true (so the deposit is accepted), transfer answers false.
  const fake = await deployRaw(fx.controller.client, fakeTokenBytecode(selectors.transfer))
  const tokenNetwork = await deploy(fx.controller.client, TokenNetwork, [
    fake,
    fx.secretRegistry,
    SETTLE_TIMEOUT_MIN,
    SETTLE_TIMEOUT_MAX,
    fx.controller.address,
    1000n,
    10_000n,
  ])
  const onFake = { ...fx, tokenNetwork }
  await sendTokenNetwork(fx, A, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT], tokenNetwork)
  await sendTokenNetwork(fx, A, 'setTotalDeposit', [1n, A.address, 10n, B.address], tokenNetwork)
  const w = await withdrawInput(onFake, 1n, A, B, 5n)
  await expectRevert(simulateTokenNetwork(fx, A, 'setTotalWithdraw', args(w, 1n), tokenNetwork), 'TN/withdraw: transfer failed')
})
