import { zeroAddress, type Address } from 'viem'
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
  closeChannel,
  deployRaw,
  deposit,
  fakeTokenBytecode,
  mintAndApprove,
  openChannel,
  participantInfo,
  passSettleWindow,
  selectors,
  sendTokenNetwork,
  settleChannel,
  settleSide,
  simulateTokenNetwork,
  tokenBalance,
  tokenNetworkEvents,
  type ChainFixture,
  type Party,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let A: Party, B: Party, C: Party
let channel: bigint
useChain(
  { channel: [0n, 0n] },
  (t) =>
    ({
      fx,
      channel,
      parties: [A, B, C],
    } = t),
)

const simulateDeposit = (who: Party, participant: Address, total: bigint, partner: Address, id = channel) =>
  simulateTokenNetwork(fx, who, 'setTotalDeposit', [id, participant, total, partner])

test('invariant 4: the deposit is a total: raising it moves only the difference, and ChannelNewDeposit carries the total', async () => {
  await mintAndApprove(fx, A, 100n)
  const start = await tokenBalance(fx, A.address)
  const first = await sendTokenNetwork(fx, A, 'setTotalDeposit', [channel, A.address, 10n, B.address])
  expect(tokenNetworkEvents(first, 'ChannelNewDeposit')[0]!.args).toEqual({ channel_identifier: channel, participant: A.address, total_deposit: 10n })
  const second = await sendTokenNetwork(fx, A, 'setTotalDeposit', [channel, A.address, 25n, B.address])
  expect(tokenNetworkEvents(second, 'ChannelNewDeposit')[0]!.args.total_deposit).toBe(25n)

  expect(await tokenBalance(fx, A.address)).toBe(start - 25n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(25n)
  expect((await participantInfo(fx, channel, A.address, B.address)).deposit).toBe(25n)
  expect((await participantInfo(fx, channel, B.address, A.address)).deposit).toBe(0n)
})

test('invariant 4: a total of zero is refused', async () => {
  await expectRevert(simulateDeposit(A, A.address, 0n, B.address), 'TN/deposit: total_deposit is zero')
})

test('invariant 4: a total that does not increase is refused: equal is "no deposit added", lower is "deposit underflow"', async () => {
  await deposit(fx, channel, A, 10n, B)
  await mintAndApprove(fx, A, 100n)
  await expectRevert(simulateDeposit(A, A.address, 10n, B.address), 'TN/deposit: no deposit added')
  await expectRevert(simulateDeposit(A, A.address, 9n, B.address), 'TN/deposit: deposit underflow')
  await expectRevert(simulateDeposit(A, A.address, 1n, B.address), 'TN/deposit: deposit underflow')
})

test('invariant 4: anyone can deposit for a participant; the tokens come from the caller', async () => {
  await mintAndApprove(fx, C, 40n)
  const cBefore = await tokenBalance(fx, C.address)
  const bBefore = await tokenBalance(fx, B.address)
  await sendTokenNetwork(fx, C, 'setTotalDeposit', [channel, B.address, 40n, A.address])
  expect((await participantInfo(fx, channel, B.address, A.address)).deposit).toBe(40n)
  expect(await tokenBalance(fx, C.address)).toBe(cBefore - 40n)
  expect(await tokenBalance(fx, B.address)).toBe(bBefore)
})

test('invariant 4: deposits are refused once the channel is closed, and for unknown or settled channels', async () => {
  await mintAndApprove(fx, A, 100n)
  await expectRevert(simulateDeposit(A, A.address, 10n, B.address, 99n), 'TN: channel not open')
  await expectRevert(simulateDeposit(A, A.address, 10n, B.address, 0n), 'TN: channel not open')
  await closeChannel(fx, channel, A, B)
  await expectRevert(simulateDeposit(A, A.address, 10n, B.address), 'TN: channel not open')
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A), settleSide(B))
  await expectRevert(simulateDeposit(A, A.address, 10n, B.address), 'TN: channel not open')
})

test("a deposit naming another partner than the channel's is refused", async () => {
  await mintAndApprove(fx, A, 100n)
  await expectRevert(simulateDeposit(A, A.address, 10n, C.address), 'TN/deposit: channel id mismatch')
  await openChannel(fx, A, C)
  // A real channel of the other pair, but not this id.
  await expectRevert(simulateDeposit(A, A.address, 10n, C.address), 'TN/deposit: channel id mismatch')
  await expectRevert(simulateDeposit(A, zeroAddress, 10n, B.address), 'TN: participant address zero')
  await expectRevert(simulateDeposit(A, A.address, 10n, zeroAddress), 'TN: partner address zero')
  await expectRevert(simulateDeposit(A, A.address, 10n, A.address), 'TN: identical addresses')
})

test("the token's own checks stop a deposit without balance or allowance", async () => {
  await expectRevert(simulateDeposit(C, A.address, 10n, B.address), 'balance too low')
  await mintAndApprove(fx, C, 5n)
  await expectRevert(simulateDeposit(C, A.address, 10n, B.address), 'balance too low')
  await mintAndApprove(fx, C, 20n, C.address)
  await expectRevert(simulateDeposit(C, A.address, 10n, B.address), 'allowance too low')
})

test('a token whose transferFrom returns false makes the deposit revert with "TN/deposit: transfer failed"', async () => {
  const fake = await deployRaw(fx.controller.client, fakeTokenBytecode(selectors.transferFrom))
  const tokenNetwork = await deploy(fx.controller.client, TokenNetwork, [
    fake,
    fx.secretRegistry,
    SETTLE_TIMEOUT_MIN,
    SETTLE_TIMEOUT_MAX,
    fx.controller.address,
    1000n,
    10_000n,
  ])
  await sendTokenNetwork(fx, A, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT], tokenNetwork)
  await expectRevert(simulateTokenNetwork(fx, A, 'setTotalDeposit', [1n, A.address, 10n, B.address], tokenNetwork), 'TN/deposit: transfer failed')
})

test('a channel deposit whose sum with the partner\'s would overflow uint256 is refused with "TN/deposit: deposit overflow"', async () => {
  // Unlimited network (the fixture's), partner holds 1: A's total of MAX would make D1 + D2 overflow. As in 0.40 the
  // network-limit sum wraps here, so the overflow check is the one that fires, before any token moves.
  await deposit(fx, channel, B, 1n, A)
  await expectRevert(simulateDeposit(A, A.address, MAX_UINT256, B.address), 'TN/deposit: deposit overflow')
})
