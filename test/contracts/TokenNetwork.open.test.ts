import { keccak256, encodePacked, zeroAddress } from 'viem'
import { expect, test } from 'vitest'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  ChannelState,
  DEFAULT_SETTLE_TIMEOUT,
  SETTLE_TIMEOUT_MAX,
  SETTLE_TIMEOUT_MIN,
  ZERO,
  channelInfo,
  closeChannel,
  mintAndApprove,
  openChannel,
  participantInfo,
  passSettleWindow,
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
useChain(
  (t) =>
    ({
      fx,
      parties: [A, B, C],
    } = t),
)

function read<F extends 'channel_counter' | 'safety_deprecation_switch'>(functionName: F) {
  return fx.controller.client.readContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName })
}

test('opening a channel emits ChannelOpened and records the pair, the settle timeout and the Opened state', async () => {
  const receipt = await sendTokenNetwork(fx, A, 'openChannel', [A.address, B.address, 42n])
  const [event] = tokenNetworkEvents(receipt, 'ChannelOpened')
  expect(event!.args).toEqual({ channel_identifier: 1n, participant1: A.address, participant2: B.address, settle_timeout: 42n })

  expect(await channelInfo(fx, 1n, A.address, B.address)).toEqual({ settleBlockNumber: 42n, state: ChannelState.Opened })
  expect(await fx.controller.client.readContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName: 'channels', args: [1n] })).toEqual([
    42n,
    ChannelState.Opened,
  ])
  const pairHash = keccak256(
    encodePacked(['address', 'address'], A.address.toLowerCase() < B.address.toLowerCase() ? [A.address, B.address] : [B.address, A.address]),
  )
  expect(
    await fx.controller.client.readContract({
      address: fx.tokenNetwork,
      abi: TokenNetwork.abi,
      functionName: 'participants_hash_to_channel_identifier',
      args: [pairHash],
    }),
  ).toBe(1n)
  for (const [p, q] of [
    [A, B],
    [B, A],
  ] as const) {
    expect(
      await fx.controller.client.readContract({
        address: fx.tokenNetwork,
        abi: TokenNetwork.abi,
        functionName: 'getChannelIdentifier',
        args: [p.address, q.address],
      }),
    ).toBe(1n)
  }
  // A fresh channel has nothing on either side.
  expect(await participantInfo(fx, 1n, A.address, B.address)).toEqual({
    deposit: 0n,
    withdrawnAmount: 0n,
    isTheCloser: false,
    balanceHash: ZERO,
    nonce: 0n,
    locksroot: ZERO,
    lockedAmount: 0n,
  })
})

test('openChannel returns the new id, and a third party can open a channel between two others', async () => {
  expect(
    await (simulateTokenNetwork(fx, C, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT]) as Promise<{ result: bigint }>).then((r) => r.result),
  ).toBe(1n)
  const receipt = await sendTokenNetwork(fx, C, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT])
  expect(tokenNetworkEvents(receipt, 'ChannelOpened')[0]!.args.participant1).toBe(A.address)
})

test('invariant 1: channel ids come from a counter: 1, 2, 3 for successive pairs', async () => {
  expect(await openChannel(fx, A, B)).toBe(1n)
  expect(await openChannel(fx, A, C)).toBe(2n)
  expect(await openChannel(fx, B, C)).toBe(3n)
  expect(await read('channel_counter')).toBe(3n)
})

test('invariant 1: only one channel per pair, whichever order the pair is given in', async () => {
  await openChannel(fx, A, B)
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT]), 'TN/open: channel exists for participants')
  await expectRevert(simulateTokenNetwork(fx, B, 'openChannel', [B.address, A.address, DEFAULT_SETTLE_TIMEOUT]), 'TN/open: channel exists for participants')
})

test('invariant 1: zero or identical participant addresses are refused', async () => {
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [zeroAddress, B.address, DEFAULT_SETTLE_TIMEOUT]), 'TN: participant address zero')
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, zeroAddress, DEFAULT_SETTLE_TIMEOUT]), 'TN: partner address zero')
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, A.address, DEFAULT_SETTLE_TIMEOUT]), 'TN: identical addresses')
})

test('invariant 2: the settle timeout must lie within [min, max]; both bounds are accepted', async () => {
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, B.address, SETTLE_TIMEOUT_MIN - 1n]), 'TN: settle timeout < min')
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, B.address, SETTLE_TIMEOUT_MAX + 1n]), 'TN: settle timeout > max')
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, B.address, 0n]), 'TN: settle timeout < min')
  expect(await openChannel(fx, A, B, SETTLE_TIMEOUT_MIN)).toBe(1n)
  expect(await openChannel(fx, A, C, SETTLE_TIMEOUT_MAX)).toBe(2n)
  // While open, getChannelInfo reports the channel's own settle timeout.
  expect((await channelInfo(fx, 1n, A.address, B.address)).settleBlockNumber).toBe(SETTLE_TIMEOUT_MIN)
  expect((await channelInfo(fx, 2n, A.address, C.address)).settleBlockNumber).toBe(SETTLE_TIMEOUT_MAX)
})

test("openChannelWithDeposit opens and deposits for participant1 with the caller's tokens", async () => {
  await mintAndApprove(fx, C, 30n)
  const before = await tokenBalance(fx, C.address)
  const receipt = await sendTokenNetwork(fx, C, 'openChannelWithDeposit', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT, 30n])
  expect(tokenNetworkEvents(receipt, 'ChannelOpened')[0]!.args.channel_identifier).toBe(1n)
  expect(tokenNetworkEvents(receipt, 'ChannelNewDeposit')[0]!.args).toEqual({ channel_identifier: 1n, participant: A.address, total_deposit: 30n })
  expect((await participantInfo(fx, 1n, A.address, B.address)).deposit).toBe(30n)
  expect((await participantInfo(fx, 1n, B.address, A.address)).deposit).toBe(0n)
  expect(await tokenBalance(fx, C.address)).toBe(before - 30n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(30n)
})

test('openChannelWithDeposit applies both the open and the deposit checks', async () => {
  await mintAndApprove(fx, A, 30n)
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannelWithDeposit', [A.address, B.address, SETTLE_TIMEOUT_MIN - 1n, 30n]), 'TN: settle timeout < min')
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannelWithDeposit', [A.address, B.address, SETTLE_TIMEOUT_MAX + 1n, 30n]), 'TN: settle timeout > max')
  await expectRevert(
    simulateTokenNetwork(fx, A, 'openChannelWithDeposit', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT, 0n]),
    'TN/deposit: total_deposit is zero',
  )
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannelWithDeposit', [A.address, A.address, DEFAULT_SETTLE_TIMEOUT, 30n]), 'TN: identical addresses')
  await openChannel(fx, A, B)
  await expectRevert(
    simulateTokenNetwork(fx, A, 'openChannelWithDeposit', [B.address, A.address, DEFAULT_SETTLE_TIMEOUT, 30n]),
    'TN/open: channel exists for participants',
  )
  // Without an allowance the token's own transferFrom check stops it.
  await expectRevert(simulateTokenNetwork(fx, B, 'openChannelWithDeposit', [B.address, C.address, DEFAULT_SETTLE_TIMEOUT, 30n]), 'balance too low')
})

test('invariant 3: a pair can reopen only after settlement, gets a new id, and the new channel starts empty', async () => {
  const first = await openChannel(fx, A, B)
  await mintAndApprove(fx, A, 10n)
  await sendTokenNetwork(fx, A, 'setTotalDeposit', [first, A.address, 10n, B.address])
  await closeChannel(fx, first, A, B)
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT]), 'TN/open: channel exists for participants')
  await passSettleWindow(fx, first, A.address, B.address)
  await settleChannel(fx, first, settleSide(A), settleSide(B))

  const second = await openChannel(fx, B, A)
  expect(second).toBe(first + 1n)
  for (const [p, q] of [
    [A, B],
    [B, A],
  ] as const) {
    expect(await participantInfo(fx, second, p.address, q.address)).toEqual({
      deposit: 0n,
      withdrawnAmount: 0n,
      isTheCloser: false,
      balanceHash: ZERO,
      nonce: 0n,
      locksroot: ZERO,
      lockedAmount: 0n,
    })
  }
  expect(await channelInfo(fx, second, A.address, B.address)).toEqual({ settleBlockNumber: DEFAULT_SETTLE_TIMEOUT, state: ChannelState.Opened })
  // The old id stays settled (and removed: it had no locks).
  expect((await channelInfo(fx, first, A.address, B.address)).state).toBe(ChannelState.Removed)
})
