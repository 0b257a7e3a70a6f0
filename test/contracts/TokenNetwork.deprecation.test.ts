import { expect, test } from 'vitest'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { locksroot, type Lock } from '../../src/protocol/locks.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  DEFAULT_SETTLE_TIMEOUT,
  blockNumber,
  closeChannel,
  mintAndApprove,
  openFundedChannel,
  passSettleWindow,
  registerSecrets,
  secretFor,
  sendTokenNetwork,
  settleChannel,
  settleSide,
  signBalanceProof,
  simulateTokenNetwork,
  tokenNetworkEvents,
  unlock,
  updateNonClosingBalanceProof,
  withdraw,
  withdrawInput,
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

const deprecated = () => fx.controller.client.readContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName: 'safety_deprecation_switch' })
const deprecate = () => sendTokenNetwork(fx, fx.controller, 'deprecate', [])

test('invariant 6: only the controller can deprecate; it emits DeprecationSwitch(true) and sets the switch', async () => {
  expect(await deprecated()).toBe(false)
  await expectRevert(simulateTokenNetwork(fx, A, 'deprecate', []), 'Can only be called by controller')
  const receipt = await deprecate()
  expect(tokenNetworkEvents(receipt, 'DeprecationSwitch')[0]!.args).toEqual({ new_value: true })
  expect(await deprecated()).toBe(true)
  // There is no way back, and deprecating again is refused.
  await expectRevert(simulateTokenNetwork(fx, fx.controller, 'deprecate', []), 'TN: network is deprecated')
})

test('invariant 6: after deprecation no channel can be opened and no deposit made', async () => {
  const channel = await openFundedChannel(fx, A, B, 10n, 0n)
  await mintAndApprove(fx, A, 100n)
  await deprecate()
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannel', [A.address, C.address, DEFAULT_SETTLE_TIMEOUT]), 'TN: network is deprecated')
  await expectRevert(simulateTokenNetwork(fx, A, 'openChannelWithDeposit', [A.address, C.address, DEFAULT_SETTLE_TIMEOUT, 10n]), 'TN: network is deprecated')
  await expectRevert(simulateTokenNetwork(fx, A, 'setTotalDeposit', [channel, A.address, 20n, B.address]), 'TN: network is deprecated')
})

test('invariant 6: after deprecation money still leaves: withdraw, cooperative settle, close, update, settle and unlock work', async () => {
  const now = await blockNumber(fx)
  const s = secretFor('deprecated lock')
  const locks: Lock[] = [{ expiration: now + 100n, amount: 5n, secrethash: s.secrethash }]
  const channel = await openFundedChannel(fx, A, B, 100n, 50n)
  const coop = await openFundedChannel(fx, A, C, 10n, 10n)
  const proofA = await signBalanceProof(fx, A, channel, { nonce: 2n, transferred: 10n, locked: 5n, locksroot: locksroot(locks) })
  const proofB = await signBalanceProof(fx, B, channel, { nonce: 1n, transferred: 3n })
  await registerSecrets(fx, [s.secret])
  await deprecate()

  await withdraw(fx, channel, A, B, 20n)
  await sendTokenNetwork(fx, C, 'cooperativeSettle', [coop, await withdrawInput(fx, coop, A, C, 12n), await withdrawInput(fx, coop, C, A, 8n)])
  await closeChannel(fx, channel, A, B, proofB)
  await updateNonClosingBalanceProof(fx, channel, A, B, proofA)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A, proofA), settleSide(B, proofB))
  const receipt = await unlock(fx, channel, B.address, A.address, locks)
  expect(tokenNetworkEvents(receipt, 'ChannelUnlocked')[0]!.args.unlocked_amount).toBe(5n)
})

test('the controller role can be handed over; then only the new controller can deprecate', async () => {
  await expectRevert(simulateTokenNetwork(fx, A, 'changeController', [A.address]), 'Can only be called by controller')
  await sendTokenNetwork(fx, fx.controller, 'changeController', [A.address])
  expect(await fx.controller.client.readContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName: 'controller' })).toBe(A.address)
  await expectRevert(simulateTokenNetwork(fx, fx.controller, 'deprecate', []), 'Can only be called by controller')
  await sendTokenNetwork(fx, A, 'deprecate', [])
  expect(await deprecated()).toBe(true)
})
