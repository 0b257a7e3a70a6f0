import { encodePacked, keccak256, zeroAddress, type Abi, type AbiParameter, type Address } from 'viem'
import { expect, test } from 'vitest'
import { SecretRegistry, TokenNetwork, TokenNetworkRegistry } from '../../src/contracts/index.ts'
import { locksroot, type Lock } from '../../src/protocol/locks.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  ChannelState,
  DEFAULT_SETTLE_TIMEOUT,
  MAX_UINT256,
  SETTLE_TIMEOUT_MAX,
  SETTLE_TIMEOUT_MIN,
  ZERO,
  blockNumber,
  channelInfo,
  closeChannel,
  openChannel,
  openFundedChannel,
  participantInfo,
  passSettleWindow,
  secretFor,
  settleChannel,
  settleSide,
  signBalanceProof,
  unlock,
  withdraw,
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

// ------------------------------------------------------------------------------------------------ ABI compatibility

function formatType(p: AbiParameter): string {
  if (p.type.startsWith('tuple')) {
    const components = (p as { components: readonly AbiParameter[] }).components
    return `(${components.map((c) => `${formatType(c)} ${c.name}`).join(', ')})${p.type.slice('tuple'.length)}`
  }
  return p.type
}

/** One line per ABI item in a human-readable form that keeps what matters for compatibility. */
function describeAbi(abi: Abi): string[] {
  return abi
    .map((item) => {
      const params = (ps: readonly AbiParameter[], withIndexed = false) =>
        ps.map((p) => [formatType(p), withIndexed && (p as { indexed?: boolean }).indexed ? 'indexed' : '', p.name].filter(Boolean).join(' ')).join(', ')
      switch (item.type) {
        case 'constructor':
          return `constructor(${params(item.inputs)})`
        case 'event':
          return `event ${item.name}(${params(item.inputs, true)})`
        case 'function': {
          const returns = item.outputs.length ? ` returns (${item.outputs.map(formatType).join(', ')})` : ''
          return `function ${item.name}(${params(item.inputs)}) ${item.stateMutability}${returns}`
        }
        default:
          return item.type
      }
    })
    .sort()
}

const utilsAbi = [
  'function MAX_SAFE_UINT256() view returns (uint256)',
  'function contractExists(address contract_address) view returns (bool)',
  'function failsafe_addition(uint256 a, uint256 b) pure returns (uint256)',
  'function failsafe_subtract(uint256 a, uint256 b) pure returns (uint256, uint256)',
  'function max(uint256 a, uint256 b) pure returns (uint256)',
  'function min(uint256 a, uint256 b) pure returns (uint256)',
  'function signature_prefix() view returns (string)',
]
const controllableAbi = ['function changeController(address new_controller) nonpayable', 'function controller() view returns (address)']
const withdrawInput = '(address participant, uint256 total_withdraw, uint256 expiration_block, bytes participant_signature, bytes partner_signature)'
const settleInput = '(address participant, uint256 transferred_amount, uint256 locked_amount, bytes32 locksroot)'

test("the TokenNetwork ABI is raiden-contracts 0.40's: functions, argument names and types, events with their indexed flags", () => {
  // Written out from 0.40. Two deliberate differences, neither changing a selector: MAX_SAFE_UINT256 has a public
  // getter, and chain_id() is declared view (0.40 left it non-view) so clients can read it with eth_call.
  expect(describeAbi(TokenNetwork.abi)).toEqual(
    [
      'constructor(address _token_address, address _secret_registry, uint256 _settlement_timeout_min, uint256 _settlement_timeout_max, address _controller, uint256 _channel_participant_deposit_limit, uint256 _token_network_deposit_limit)',
      'event ChannelClosed(uint256 indexed channel_identifier, address indexed closing_participant, uint256 indexed nonce, bytes32 balance_hash)',
      'event ChannelNewDeposit(uint256 indexed channel_identifier, address indexed participant, uint256 total_deposit)',
      'event ChannelOpened(uint256 indexed channel_identifier, address indexed participant1, address indexed participant2, uint256 settle_timeout)',
      'event ChannelSettled(uint256 indexed channel_identifier, address participant1, uint256 participant1_amount, bytes32 participant1_locksroot, address participant2, uint256 participant2_amount, bytes32 participant2_locksroot)',
      'event ChannelUnlocked(uint256 indexed channel_identifier, address indexed receiver, address indexed sender, bytes32 locksroot, uint256 unlocked_amount, uint256 returned_tokens)',
      'event ChannelWithdraw(uint256 indexed channel_identifier, address indexed participant, uint256 total_withdraw)',
      'event DeprecationSwitch(bool new_value)',
      'event NonClosingBalanceProofUpdated(uint256 indexed channel_identifier, address indexed closing_participant, uint256 indexed nonce, bytes32 balance_hash)',
      'function chain_id() view returns (uint256)',
      'function channel_counter() view returns (uint256)',
      'function channel_participant_deposit_limit() view returns (uint256)',
      'function channels(uint256) view returns (uint256, uint8)',
      'function closeChannel(uint256 channel_identifier, address non_closing_participant, address closing_participant, bytes32 balance_hash, uint256 nonce, bytes32 additional_hash, bytes non_closing_signature, bytes closing_signature) nonpayable',
      `function cooperativeSettle(uint256 channel_identifier, ${withdrawInput} data1, ${withdrawInput} data2) nonpayable`,
      'function deprecate() nonpayable',
      'function getChannelIdentifier(address participant, address partner) view returns (uint256)',
      'function getChannelInfo(uint256 channel_identifier, address participant1, address participant2) view returns (uint256, uint8)',
      'function getChannelParticipantInfo(uint256 channel_identifier, address participant, address partner) view returns (uint256, uint256, bool, bytes32, uint256, bytes32, uint256)',
      'function getMaxPossibleReceivableAmount(uint256 participant1_deposit, uint256 participant1_withdrawn, uint256 participant1_transferred, uint256 participant1_locked, uint256 participant2_transferred, uint256 participant2_locked) pure returns (uint256)',
      'function getParticipantsHash(address participant, address partner) pure returns (bytes32)',
      'function getUnlockIdentifier(uint256 channel_identifier, address sender, address receiver) pure returns (bytes32)',
      'function openChannel(address participant1, address participant2, uint256 settle_timeout) nonpayable returns (uint256)',
      'function openChannelWithDeposit(address participant1, address participant2, uint256 settle_timeout, uint256 participant1_total_deposit) nonpayable returns (uint256)',
      'function participants_hash_to_channel_identifier(bytes32) view returns (uint256)',
      'function removeLimits() nonpayable',
      'function safety_deprecation_switch() view returns (bool)',
      'function secret_registry() view returns (address)',
      'function setTotalDeposit(uint256 channel_identifier, address participant, uint256 total_deposit, address partner) nonpayable',
      'function setTotalWithdraw(uint256 channel_identifier, address participant, uint256 total_withdraw, uint256 expiration_block, bytes participant_signature, bytes partner_signature) nonpayable',
      `function setTotalWithdraw2(uint256 channel_identifier, ${withdrawInput} withdraw_data) nonpayable`,
      'function settleChannel(uint256 channel_identifier, address participant1, uint256 participant1_transferred_amount, uint256 participant1_locked_amount, bytes32 participant1_locksroot, address participant2, uint256 participant2_transferred_amount, uint256 participant2_locked_amount, bytes32 participant2_locksroot) nonpayable',
      `function settleChannel2(uint256 channel_identifier, ${settleInput} participant1_settlement, ${settleInput} participant2_settlement) nonpayable`,
      'function settlement_timeout_max() view returns (uint256)',
      'function settlement_timeout_min() view returns (uint256)',
      'function token() view returns (address)',
      'function token_network_deposit_limit() view returns (uint256)',
      'function unlock(uint256 channel_identifier, address receiver, address sender, bytes locks) nonpayable',
      'function updateNonClosingBalanceProof(uint256 channel_identifier, address closing_participant, address non_closing_participant, bytes32 balance_hash, uint256 nonce, bytes32 additional_hash, bytes closing_signature, bytes non_closing_signature) nonpayable',
      ...utilsAbi,
      ...controllableAbi,
    ].sort(),
  )
})

test("the TokenNetworkRegistry and SecretRegistry ABIs are raiden-contracts 0.40's", () => {
  expect(describeAbi(TokenNetworkRegistry.abi)).toEqual(
    [
      'constructor(address _secret_registry_address, uint256 _settlement_timeout_min, uint256 _settlement_timeout_max, uint256 _max_token_networks)',
      'event TokenNetworkCreated(address indexed token_address, address indexed token_network_address)',
      'function createERC20TokenNetwork(address _token_address, uint256 _channel_participant_deposit_limit, uint256 _token_network_deposit_limit) nonpayable returns (address)',
      'function createERC20TokenNetworkWithoutLimits(address _token_address) nonpayable returns (address)',
      'function max_token_networks() view returns (uint256)',
      'function removeLimits() nonpayable',
      'function secret_registry_address() view returns (address)',
      'function settlement_timeout_max() view returns (uint256)',
      'function settlement_timeout_min() view returns (uint256)',
      'function token_network_created() view returns (uint256)',
      'function token_to_token_networks(address) view returns (address)',
      ...utilsAbi,
      ...controllableAbi,
    ].sort(),
  )
  expect(describeAbi(SecretRegistry.abi)).toEqual([
    'event SecretRevealed(bytes32 indexed secrethash, bytes32 secret)',
    'function getSecretRevealBlockHeight(bytes32 secrethash) view returns (uint256)',
    'function registerSecret(bytes32 secret) nonpayable returns (bool)',
    'function registerSecretBatch(bytes32[] secrets) nonpayable returns (bool)',
  ])
})

// ------------------------------------------------------------------------------------------------ views

/** Reads any TokenNetwork view by name (untyped: these tests compare plain values). */
function view(functionName: string, args: readonly unknown[] = []): Promise<unknown> {
  return fx.controller.client.readContract({ address: fx.tokenNetwork, abi: TokenNetwork.abi, functionName, args } as never)
}

test('the public state getters report the deployment', async () => {
  expect(await view('token')).toBe(fx.token)
  expect(await view('secret_registry')).toBe(fx.secretRegistry)
  expect(await view('settlement_timeout_min')).toBe(SETTLE_TIMEOUT_MIN)
  expect(await view('settlement_timeout_max')).toBe(SETTLE_TIMEOUT_MAX)
  expect(await view('controller')).toBe(fx.controller.address)
  expect(await view('channel_counter')).toBe(0n)
  expect(await view('safety_deprecation_switch')).toBe(false)
  expect(await view('signature_prefix')).toBe('\x19Ethereum Signed Message:\n')
  expect(await view('MAX_SAFE_UINT256')).toBe(MAX_UINT256)
  expect(await view('contractExists', [fx.token])).toBe(true)
  expect(await view('contractExists', [A.address])).toBe(false)
})

test('chain_id() is the chain id signatures commit to', async () => {
  expect(await view('chain_id')).toBe(fx.chainId)
  expect(fx.chainId).toBe(31337n)
})

test('getParticipantsHash is keccak(lower address || higher address), the same in both orders', async () => {
  const [low, high] = [A.address, B.address].sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : 1)) as [Address, Address]
  const expected = keccak256(encodePacked(['address', 'address'], [low, high]))
  expect(await view('getParticipantsHash', [A.address, B.address])).toBe(expected)
  expect(await view('getParticipantsHash', [B.address, A.address])).toBe(expected)
  await expectRevert(view('getParticipantsHash', [zeroAddress, B.address]), 'TN: participant address zero')
  await expectRevert(view('getParticipantsHash', [A.address, zeroAddress]), 'TN: partner address zero')
  await expectRevert(view('getParticipantsHash', [A.address, A.address]), 'TN: identical addresses')
})

test('getChannelIdentifier is 0 for a pair without a channel, and checks the addresses', async () => {
  expect(await view('getChannelIdentifier', [A.address, C.address])).toBe(0n)
  await expectRevert(view('getChannelIdentifier', [zeroAddress, B.address]), 'TN: participant address zero')
  await expectRevert(view('getChannelIdentifier', [A.address, zeroAddress]), 'TN: partner address zero')
  await expectRevert(view('getChannelIdentifier', [B.address, B.address]), 'TN: identical addresses')
})

test('getUnlockIdentifier is keccak(uint256 id || sender || receiver); order matters, sender must differ from receiver', async () => {
  const id = await view('getUnlockIdentifier', [7n, A.address, B.address])
  expect(id).toBe(keccak256(encodePacked(['uint256', 'address', 'address'], [7n, A.address, B.address])))
  expect(await view('getUnlockIdentifier', [7n, B.address, A.address])).not.toBe(id)
  await expectRevert(view('getUnlockIdentifier', [7n, A.address, A.address]), 'TN: sender/receiver mismatch')
})

test('getChannelInfo follows a channel from NonExistent to Opened, Closed, Settled and Removed', async () => {
  expect(await channelInfo(fx, 0n, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.NonExistent })
  expect(await channelInfo(fx, 1n, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.NonExistent })
  const channel = await openFundedChannel(fx, A, B, 50n, 0n)
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({ settleBlockNumber: DEFAULT_SETTLE_TIMEOUT, state: ChannelState.Opened })
  expect(await channelInfo(fx, channel + 1n, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.NonExistent })

  const lock: Lock = { expiration: (await blockNumber(fx)) + 100n, amount: 5n, secrethash: secretFor('info').secrethash }
  const proof = await signBalanceProof(fx, A, channel, { nonce: 1n, locked: 5n, locksroot: locksroot([lock]) })
  const close = await closeChannel(fx, channel, B, A, proof)
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({
    settleBlockNumber: close.blockNumber + DEFAULT_SETTLE_TIMEOUT,
    state: ChannelState.Closed,
  })
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(B), settleSide(A, proof))
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.Settled })
  expect(await channelInfo(fx, channel, B.address, A.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.Settled })
  // Storage forgets the participants: asked about another pair, a settled id looks Removed.
  expect((await channelInfo(fx, channel, A.address, C.address)).state).toBe(ChannelState.Removed)
  await expectRevert(view('getChannelInfo', [channel, A.address, A.address]), 'TN: sender/receiver mismatch')
  await unlock(fx, channel, B.address, A.address, [lock])
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({ settleBlockNumber: 0n, state: ChannelState.Removed })
})

test('getChannelParticipantInfo reports deposit, withdrawn, closer flag, balance hash, nonce, then the settled locks', async () => {
  const channel = await openFundedChannel(fx, A, B, 100n, 40n)
  await withdraw(fx, channel, A, B, 15n)
  expect(await participantInfo(fx, channel, A.address, B.address)).toEqual({
    deposit: 100n,
    withdrawnAmount: 15n,
    isTheCloser: false,
    balanceHash: ZERO,
    nonce: 0n,
    locksroot: ZERO,
    lockedAmount: 0n,
  })
  const lock: Lock = { expiration: (await blockNumber(fx)) + 100n, amount: 5n, secrethash: secretFor('participant info').secrethash }
  const proof = await signBalanceProof(fx, A, channel, { nonce: 3n, transferred: 10n, locked: 5n, locksroot: locksroot([lock]) })
  await closeChannel(fx, channel, B, A, proof)
  expect(await participantInfo(fx, channel, A.address, B.address)).toEqual({
    deposit: 100n,
    withdrawnAmount: 15n,
    isTheCloser: false,
    balanceHash: proof.balanceHash,
    nonce: 3n,
    locksroot: ZERO,
    lockedAmount: 0n,
  })
  expect(await participantInfo(fx, channel, B.address, A.address)).toMatchObject({ deposit: 40n, isTheCloser: true, nonce: 0n })
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(B), settleSide(A, proof))
  // After settle only the unlock record remains, keyed (channel, sender, receiver).
  expect(await participantInfo(fx, channel, A.address, B.address)).toEqual({
    deposit: 0n,
    withdrawnAmount: 0n,
    isTheCloser: false,
    balanceHash: ZERO,
    nonce: 0n,
    locksroot: proof.locksroot,
    lockedAmount: 5n,
  })
  expect(await participantInfo(fx, channel, A.address, C.address)).toMatchObject({ lockedAmount: 0n })
  await expectRevert(view('getChannelParticipantInfo', [channel, A.address, A.address]), 'TN: sender/receiver mismatch')
})

test('getMaxPossibleReceivableAmount is (T2 + L2) - (T1 + L1) + D1 - W1 with saturating sums and a floor at 0', async () => {
  const max = (d1: bigint, w1: bigint, t1: bigint, l1: bigint, t2: bigint, l2: bigint) => view('getMaxPossibleReceivableAmount', [d1, w1, t1, l1, t2, l2])
  expect(await max(100n, 10n, 5n, 5n, 20n, 3n)).toBe(23n - 10n + 100n - 10n)
  expect(await max(100n, 500n, 0n, 0n, 20n, 0n)).toBe(0n)
  expect(await max(100n, 0n, 0n, 0n, MAX_UINT256, 1n)).toBe(MAX_UINT256)
  expect(await max(100n, 0n, MAX_UINT256, 1n, MAX_UINT256, 0n)).toBe(100n)
  await expectRevert(view('getMaxPossibleReceivableAmount', [100n, 0n, 10n, 0n, 9n, 0n]), 'TN: transfers not ordered')
})

test('the settlement helpers min, max, failsafe_subtract and failsafe_addition never revert', async () => {
  expect(await view('min', [3n, 5n])).toBe(3n)
  expect(await view('min', [5n, 3n])).toBe(3n)
  expect(await view('max', [3n, 5n])).toBe(5n)
  expect(await view('max', [5n, 3n])).toBe(5n)
  expect(await view('failsafe_subtract', [10n, 3n])).toEqual([7n, 3n])
  expect(await view('failsafe_subtract', [3n, 10n])).toEqual([0n, 3n])
  expect(await view('failsafe_subtract', [3n, 3n])).toEqual([0n, 3n])
  expect(await view('failsafe_addition', [3n, 10n])).toBe(13n)
  expect(await view('failsafe_addition', [MAX_UINT256, 1n])).toBe(MAX_UINT256)
  expect(await view('failsafe_addition', [MAX_UINT256 - 1n, 1n])).toBe(MAX_UINT256)
})

test("channels(id) exposes settle_block_number and the stored state; participants_hash_to_channel_identifier the pair's id", async () => {
  const channel = await openChannel(fx, A, B, 33n)
  expect(await view('channels', [channel])).toEqual([33n, ChannelState.Opened])
  expect(await view('participants_hash_to_channel_identifier', [await view('getParticipantsHash', [A.address, B.address])])).toBe(channel)
  expect(await view('channels', [channel + 1n])).toEqual([0n, ChannelState.NonExistent])
})
