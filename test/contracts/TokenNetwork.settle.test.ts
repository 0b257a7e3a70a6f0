import { keccak256, toHex } from 'viem'
import { beforeEach, expect, test } from 'vitest'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { locksroot, type Lock } from '../../src/protocol/locks.ts'
import { useChain } from '../support/chainSuite.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import {
  ChannelState,
  DEFAULT_SETTLE_TIMEOUT,
  SETTLE_TIMEOUT_MAX,
  SETTLE_TIMEOUT_MIN,
  ZERO,
  blockNumber,
  channelInfo,
  closeChannel,
  deployRaw,
  fakeTokenBytecode,
  mineTo,
  openChannel,
  participantInfo,
  passSettleWindow,
  secretFor,
  selectors,
  sendTokenNetwork,
  settleArgs,
  settleChannel,
  settleSide,
  signBalanceProof,
  simulateTokenNetwork,
  tokenBalance,
  tokenNetworkEvents,
  updateNonClosingBalanceProof,
  type ChainFixture,
  type Party,
  type SettleSide,
  type SignedBalanceProof,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let A: Party, B: Party, C: Party
let channel: bigint
let proofOfA: SignedBalanceProof
let proofOfB: SignedBalanceProof
useChain(
  { channel: [100n, 50n] },
  (t) =>
    ({
      fx,
      channel,
      parties: [A, B, C],
    } = t),
)
beforeEach(async () => {
  proofOfA = await signBalanceProof(fx, A, channel, { nonce: 3n, transferred: 30n })
  proofOfB = await signBalanceProof(fx, B, channel, { nonce: 2n, transferred: 10n })
})

/** A closes with B's proof, B updates with A's. */
async function closeAndUpdate() {
  const close = await closeChannel(fx, channel, A, B, proofOfB)
  await updateNonClosingBalanceProof(fx, channel, A, B, proofOfA)
  return close
}
const simulateSettle = (first: SettleSide, second: SettleSide, id = channel, sender: Party = C) =>
  simulateTokenNetwork(fx, sender, 'settleChannel', settleArgs(id, first, second))

test('invariant 12: settling an open channel is refused', async () => {
  await expectRevert(simulateSettle(settleSide(B), settleSide(A)), 'TN/settle: channel not closed')
})

test('invariant 12: settle is refused during the settle window and allowed from close block + timeout + 1', async () => {
  const close = await closeAndUpdate()
  const lastBlockOfWindow = close.blockNumber + DEFAULT_SETTLE_TIMEOUT
  expect((await channelInfo(fx, channel, A.address, B.address)).settleBlockNumber).toBe(lastBlockOfWindow)
  const [first, second] = [settleSide(B, proofOfB), settleSide(A, proofOfA)]

  await expectRevert(simulateSettle(first, second), 'TN/settle: settlement timeout')
  // A settle transaction mined in the window's last block reverts.
  await mineTo(fx, lastBlockOfWindow - 1n)
  const hash = await C.client.writeContract({
    address: fx.tokenNetwork,
    abi: TokenNetwork.abi,
    functionName: 'settleChannel',
    args: settleArgs(channel, first, second),
    gas: 500_000n,
  })
  const early = await C.client.waitForTransactionReceipt({ hash })
  expect(early.blockNumber).toBe(lastBlockOfWindow)
  expect(early.status).toBe('reverted')
  await expectRevert(simulateSettle(first, second), 'TN/settle: settlement timeout')
  // The next block is the first one allowed.
  const ok = await sendTokenNetwork(fx, C, 'settleChannel', settleArgs(channel, first, second))
  expect(ok.blockNumber).toBe(lastBlockOfWindow + 1n)
})

test('invariant 12: with no balance proofs each side gets its deposit minus its withdrawn amount, and the channel is removed', async () => {
  const aBefore = await tokenBalance(fx, A.address)
  const bBefore = await tokenBalance(fx, B.address)
  await closeChannel(fx, channel, B, A)
  await passSettleWindow(fx, channel, A.address, B.address)
  const { receipt, amount1, amount2 } = await settleChannel(fx, channel, settleSide(A), settleSide(B))
  expect([amount1, amount2]).toEqual([100n, 50n])
  expect(await tokenBalance(fx, A.address)).toBe(aBefore + 100n)
  expect(await tokenBalance(fx, B.address)).toBe(bBefore + 50n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(0n)
  expect(tokenNetworkEvents(receipt, 'ChannelSettled')[0]!.args).toEqual({
    channel_identifier: channel,
    participant1: A.address,
    participant1_amount: 100n,
    participant1_locksroot: ZERO,
    participant2: B.address,
    participant2_amount: 50n,
    participant2_locksroot: ZERO,
  })
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.Removed })
  expect(
    await fx.controller.client.readContract({
      address: fx.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'getChannelIdentifier',
      args: [A.address, B.address],
    }),
  ).toBe(0n)
  expect(await participantInfo(fx, channel, A.address, B.address)).toEqual({
    deposit: 0n,
    withdrawnAmount: 0n,
    isTheCloser: false,
    balanceHash: ZERO,
    nonce: 0n,
    locksroot: ZERO,
    lockedAmount: 0n,
  })
})

test('settle pays the balances the two proofs give, whoever sends it, and a second settle is refused', async () => {
  const aBefore = await tokenBalance(fx, A.address)
  const bBefore = await tokenBalance(fx, B.address)
  await closeAndUpdate()
  await passSettleWindow(fx, channel, A.address, B.address)
  // A sent 30 to B, B sent 10 to A: A ends with 100 - 30 + 10, B with 50 + 30 - 10.
  const { amount1, amount2, first } = await settleChannel(fx, channel, settleSide(A, proofOfA), settleSide(B, proofOfB), C)
  expect(first.participant).toBe(B.address)
  expect([amount1, amount2]).toEqual([70n, 80n])
  expect(await tokenBalance(fx, A.address)).toBe(aBefore + 80n)
  expect(await tokenBalance(fx, B.address)).toBe(bBefore + 70n)
  await expectRevert(simulateSettle(settleSide(B, proofOfB), settleSide(A, proofOfA)), 'TN/settle: channel id mismatch')
})

test('settleChannel2 takes the same data as SettleInput tuples', async () => {
  await closeAndUpdate()
  await passSettleWindow(fx, channel, A.address, B.address)
  const tuple = (s: SettleSide) => ({ participant: s.participant, transferred_amount: s.transferred, locked_amount: s.locked, locksroot: s.locksroot })
  await expectRevert(
    simulateTokenNetwork(fx, C, 'settleChannel2', [channel, tuple(settleSide(A, proofOfA)), tuple(settleSide(B, proofOfB))]),
    'TN: transfers not ordered',
  )
  const receipt = await sendTokenNetwork(fx, C, 'settleChannel2', [channel, tuple(settleSide(B, proofOfB)), tuple(settleSide(A, proofOfA))])
  expect(tokenNetworkEvents(receipt, 'ChannelSettled')[0]!.args).toMatchObject({
    participant1: B.address,
    participant1_amount: 70n,
    participant2: A.address,
    participant2_amount: 80n,
  })
})

test('a settle naming another pair is "channel id mismatch"', async () => {
  await openChannel(fx, A, C)
  await closeAndUpdate()
  await passSettleWindow(fx, channel, A.address, B.address)
  await expectRevert(simulateSettle(settleSide(C), settleSide(A, proofOfA)), 'TN/settle: channel id mismatch')
  await expectRevert(simulateSettle(settleSide(B, proofOfB), settleSide(A, proofOfA), channel + 1n), 'TN/settle: channel id mismatch')
})

test('invariant 13: every wrong transferred amount, locked amount or locksroot is refused, per participant', async () => {
  await closeAndUpdate()
  await passSettleWindow(fx, channel, A.address, B.address)
  const b = settleSide(B, proofOfB)
  const a = settleSide(A, proofOfA)
  const otherRoot = keccak256(toHex('other root'))
  // B is participant 1 (the smaller sum); keep the order valid while breaking one value.
  await expectRevert(simulateSettle({ ...b, transferred: 9n }, a), 'TN/settle: invalid data for participant 1')
  await expectRevert(simulateSettle({ ...b, locked: 1n }, a), 'TN/settle: invalid data for participant 1')
  await expectRevert(simulateSettle({ ...b, locksroot: otherRoot }, a), 'TN/settle: invalid data for participant 1')
  await expectRevert(simulateSettle(b, { ...a, transferred: 31n }), 'TN/settle: invalid data for participant 2')
  await expectRevert(simulateSettle(b, { ...a, locked: 1n }), 'TN/settle: invalid data for participant 2')
  await expectRevert(simulateSettle(b, { ...a, locksroot: otherRoot }), 'TN/settle: invalid data for participant 2')
})

test('invariant 13: the side with the larger transferred + locked must come second ("TN: transfers not ordered")', async () => {
  await closeAndUpdate()
  await passSettleWindow(fx, channel, A.address, B.address)
  await expectRevert(simulateSettle(settleSide(A, proofOfA), settleSide(B, proofOfB)), 'TN: transfers not ordered')
})

test('a side without a stored proof settles with zero amounts and any locksroot, but not with non-zero amounts', async () => {
  await closeChannel(fx, channel, B, A, proofOfA)
  await passSettleWindow(fx, channel, A.address, B.address)
  const anyRoot = keccak256(toHex('whatever'))
  await expectRevert(simulateSettle({ ...settleSide(B), transferred: 1n }, settleSide(A, proofOfA)), 'TN/settle: invalid data for participant 1')
  const { receipt } = await settleChannel(fx, channel, { ...settleSide(B), locksroot: anyRoot }, settleSide(A, proofOfA))
  // The event repeats the locksroots as given.
  expect(tokenNetworkEvents(receipt, 'ChannelSettled')[0]!.args).toMatchObject({
    participant1: B.address,
    participant1_locksroot: anyRoot,
    participant1_amount: 80n,
  })
})

test('settle keeps pending locks back and records them for unlock; getChannelInfo says Settled until they are unlocked', async () => {
  const lock: Lock = { expiration: (await blockNumber(fx)) + 100n, amount: 15n, secrethash: secretFor('pending').secrethash }
  const withLock = await signBalanceProof(fx, A, channel, { nonce: 3n, transferred: 30n, locked: 15n, locksroot: locksroot([lock]) })
  await closeChannel(fx, channel, B, A, withLock)
  await passSettleWindow(fx, channel, A.address, B.address)
  const { amount1, amount2, receipt } = await settleChannel(fx, channel, settleSide(A, withLock), settleSide(B))
  // B first (0 < 45): B gets 50 + 30 now, A gets 100 - 30 - 15, the 15 stay in the contract.
  expect([amount1, amount2]).toEqual([80n, 55n])
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(15n)
  expect(tokenNetworkEvents(receipt, 'ChannelSettled')[0]!.args.participant2_locksroot).toBe(withLock.locksroot)
  expect(await participantInfo(fx, channel, A.address, B.address)).toMatchObject({ locksroot: withLock.locksroot, lockedAmount: 15n, deposit: 0n })
  expect(await participantInfo(fx, channel, B.address, A.address)).toMatchObject({ locksroot: ZERO, lockedAmount: 0n })
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.Settled })
  expect(await channelInfo(fx, channel, B.address, A.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.Settled })
})

test("a token whose transfer returns false makes settle revert with the failing participant's reason", async () => {
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
  // Channel 1: only A deposited, so participant 1 (A, first by order of zero sums) gets a payout.
  await sendTokenNetwork(fx, A, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT], tokenNetwork)
  await sendTokenNetwork(fx, A, 'setTotalDeposit', [1n, A.address, 10n, B.address], tokenNetwork)
  await closeChannel(onFake, 1n, A, B)
  // Channel 2: only C deposited, C second: participant 1 gets 0 and participant 2's transfer fails.
  await sendTokenNetwork(fx, A, 'openChannel', [A.address, C.address, DEFAULT_SETTLE_TIMEOUT], tokenNetwork)
  await sendTokenNetwork(fx, C, 'setTotalDeposit', [2n, C.address, 10n, A.address], tokenNetwork)
  await closeChannel(onFake, 2n, A, C)
  await mineTo(fx, (await blockNumber(fx)) + DEFAULT_SETTLE_TIMEOUT + 1n)
  await expectRevert(
    simulateTokenNetwork(fx, C, 'settleChannel', settleArgs(1n, settleSide(A), settleSide(B)), tokenNetwork),
    'TN/settle: transfer for participant 1 failed',
  )
  await expectRevert(
    simulateTokenNetwork(fx, C, 'settleChannel', settleArgs(2n, settleSide(A), settleSide(C)), tokenNetwork),
    'TN/settle: transfer for participant 2 failed',
  )
})
