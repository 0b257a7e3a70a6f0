import { zeroAddress, type Address } from 'viem'
import { expect, test } from 'vitest'
import { CustomToken, TokenNetwork } from '../../src/contracts/index.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  DEFAULT_SETTLE_TIMEOUT,
  MAX_UINT256,
  deployRaw,
  deployRevertReason,
  deposit,
  fakeTokenBytecode,
  mined,
  mintAndApprove,
  openChannel,
  sendTokenNetwork,
  simulateTokenNetwork,
  type ChainFixture,
  type Party,
} from '../support/tokenNetwork.ts'

const PARTICIPANT_LIMIT = 100n
const NETWORK_LIMIT = 250n

let fx: ChainFixture
let A: Party, B: Party, C: Party, D: Party
useChain(
  { deploy: { participantDepositLimit: PARTICIPANT_LIMIT, networkDepositLimit: NETWORK_LIMIT } },
  (t) =>
    ({
      fx,
      parties: [A, B, C, D],
    } = t),
)

const limit = (functionName: 'channel_participant_deposit_limit' | 'token_network_deposit_limit') =>
  fx.controller.client.readContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName })

test('the TokenNetwork constructor checks its arguments in the order of 0.40', async () => {
  const noCode: Address = A.address
  const zeroSupply = await deployRaw(fx.controller.client, fakeTokenBytecode(null))
  const reason = (token: Address, sr: Address, min: bigint, max: bigint, controller: Address, participant: bigint, network: bigint) =>
    deployRevertReason(fx.controller.client, TokenNetwork, [token, sr, min, max, controller, participant, network])
  const ok = [fx.token, fx.secretRegistry, 5n, 100n, fx.controller.address, 10n, 20n] as const
  expect(await reason(...ok)).toBeNull()
  // Each line breaks one more argument than the next, so a reason shows it is checked before the later ones.
  expect(await reason(zeroAddress, zeroAddress, 0n, 0n, zeroAddress, 0n, 0n)).toBe('TN: invalid token address')
  expect(await reason(noCode, zeroAddress, 0n, 0n, zeroAddress, 0n, 0n)).toBe('TN: invalid SR address')
  expect(await reason(noCode, noCode, 0n, 0n, zeroAddress, 0n, 0n)).toBe('TN: invalid controller address')
  expect(await reason(noCode, noCode, 0n, 0n, A.address, 0n, 0n)).toBe('TN: invalid settle timeout min')
  expect(await reason(noCode, noCode, 5n, 5n, A.address, 0n, 0n)).toBe('TN: invalid settle timeouts')
  expect(await reason(noCode, noCode, 5n, 4n, A.address, 0n, 0n)).toBe('TN: invalid settle timeouts')
  expect(await reason(noCode, noCode, 5n, 6n, A.address, 0n, 0n)).toBe('TN: invalid token contract')
  expect(await reason(fx.token, noCode, 5n, 6n, A.address, 0n, 0n)).toBe('TN: invalid SR contract')
  expect(await reason(fx.token, fx.secretRegistry, 5n, 6n, A.address, 0n, 0n)).toBe('TN: invalid participant limit')
  expect(await reason(fx.token, fx.secretRegistry, 5n, 6n, A.address, 10n, 0n)).toBe('TN: invalid network deposit limit')
  expect(await reason(fx.token, fx.secretRegistry, 5n, 6n, A.address, 10n, 9n)).toBe('TN: invalid deposit limits')
  expect(await reason(zeroSupply, fx.secretRegistry, 5n, 6n, A.address, 10n, 10n)).toBe('TN: no supply for token')
})

test("invariant 5: a participant's total deposit may reach the participant limit but not exceed it", async () => {
  const channel = await openChannel(fx, A, B)
  await mintAndApprove(fx, A, 200n)
  await expectRevert(
    simulateTokenNetwork(fx, A, 'setTotalDeposit', [channel, A.address, PARTICIPANT_LIMIT + 1n, B.address]),
    'TN/deposit: deposit limit reached',
  )
  await sendTokenNetwork(fx, A, 'setTotalDeposit', [channel, A.address, PARTICIPANT_LIMIT, B.address])
  await expectRevert(
    simulateTokenNetwork(fx, A, 'setTotalDeposit', [channel, A.address, PARTICIPANT_LIMIT + 1n, B.address]),
    'TN/deposit: deposit limit reached',
  )
})

test('invariant 5: deposits across channels stop at the network limit, and opening stops once it is reached', async () => {
  const ab = await openChannel(fx, A, B)
  const cd = await openChannel(fx, C, D)
  await deposit(fx, ab, A, 100n, B)
  await deposit(fx, ab, B, 100n, A)
  await mintAndApprove(fx, C, 100n)
  // 200 held: 51 more would pass 250.
  await expectRevert(simulateTokenNetwork(fx, C, 'setTotalDeposit', [cd, C.address, 51n, D.address]), 'TN/deposit: network limit reached')
  await sendTokenNetwork(fx, C, 'setTotalDeposit', [cd, C.address, 50n, D.address])
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, C.address, DEFAULT_SETTLE_TIMEOUT]), 'TN/open: network deposit limit reached')
})

test('tokens sent to the contract directly count towards the network limit', async () => {
  await mintAndApprove(fx, A, NETWORK_LIMIT)
  await mined(
    A.client,
    await A.client.writeContract({ address: fx.token, abi: CustomToken.abi, functionName: 'transfer', args: [fx.tokenNetwork, NETWORK_LIMIT] }),
  )
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, B.address, DEFAULT_SETTLE_TIMEOUT]), 'TN/open: network deposit limit reached')
})

test('invariant 5: only the controller can remove the deposit limits, which sets both to MAX', async () => {
  await expectRevert(simulateTokenNetwork(fx, A, 'removeLimits', []), 'Can only be called by controller')
  await sendTokenNetwork(fx, fx.controller, 'removeLimits', [])
  expect(await limit('channel_participant_deposit_limit')).toBe(MAX_UINT256)
  expect(await limit('token_network_deposit_limit')).toBe(MAX_UINT256)
  const channel = await openChannel(fx, A, B)
  await deposit(fx, channel, A, 10_000n, B)
})
