import { getAddress, parseEventLogs, zeroAddress, type Address } from 'viem'
import { expect, test } from 'vitest'
import { CustomToken, TokenNetwork, TokenNetworkRegistry } from '../../src/contracts/index.ts'
import { useChain } from '../support/chainSuite.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import {
  MAX_UINT256,
  SETTLE_TIMEOUT_MAX,
  SETTLE_TIMEOUT_MIN,
  deployRaw,
  deployRevertReason,
  fakeTokenBytecode,
  mined,
  type ChainFixture,
  type Party,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let stranger: Party
useChain(
  (t) =>
    ({
      fx,
      parties: [stranger],
    } = t),
)

const newToken = async () => getAddress(await deploy(fx.controller.client, CustomToken, [1000n, 18, 'New', 'NEW']))
const newRegistry = async (maxTokenNetworks: bigint) =>
  await deploy(fx.controller.client, TokenNetworkRegistry, [fx.secretRegistry, SETTLE_TIMEOUT_MIN, SETTLE_TIMEOUT_MAX, maxTokenNetworks])
const read = <
  F extends 'secret_registry_address' | 'settlement_timeout_min' | 'settlement_timeout_max' | 'max_token_networks' | 'token_network_created' | 'controller',
>(
  registry: Address,
  functionName: F,
) => fx.controller.client.readContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName })
const simulateCreate = (registry: Address, token: Address, participantLimit: bigint, networkLimit: bigint, who: Party = stranger) =>
  who.client.simulateContract({
    address: registry,
    abi: TokenNetworkRegistry.abi,
    functionName: 'createERC20TokenNetwork',
    args: [token, participantLimit, networkLimit],
  })
const create = async (registry: Address, token: Address, participantLimit = 100n, networkLimit = 1000n, who: Party = stranger) =>
  mined(
    who.client,
    await who.client.writeContract({
      address: registry,
      abi: TokenNetworkRegistry.abi,
      functionName: 'createERC20TokenNetwork',
      args: [token, participantLimit, networkLimit],
    }),
  )

test('the constructor stores its arguments and makes the deployer the controller', async () => {
  const registry = await newRegistry(3n)
  expect(await read(registry, 'secret_registry_address')).toBe(fx.secretRegistry)
  expect(await read(registry, 'settlement_timeout_min')).toBe(SETTLE_TIMEOUT_MIN)
  expect(await read(registry, 'settlement_timeout_max')).toBe(SETTLE_TIMEOUT_MAX)
  expect(await read(registry, 'max_token_networks')).toBe(3n)
  expect(await read(registry, 'token_network_created')).toBe(0n)
  expect(await read(registry, 'controller')).toBe(fx.controller.address)
})

test('the constructor refuses bad settle timeouts, secret registries and token network limits with their reasons', async () => {
  const reason = (sr: Address, min: bigint, max: bigint, limit: bigint) => deployRevertReason(fx.controller.client, TokenNetworkRegistry, [sr, min, max, limit])
  expect(await reason(fx.secretRegistry, 0n, 100n, 1n)).toBe('TNR: invalid settle timeout min')
  expect(await reason(fx.secretRegistry, 5n, 0n, 1n)).toBe('TNR: invalid settle timeout max')
  expect(await reason(fx.secretRegistry, 5n, 5n, 1n)).toBe('TNR: invalid settle timeouts')
  expect(await reason(fx.secretRegistry, 6n, 5n, 1n)).toBe('TNR: invalid settle timeouts')
  expect(await reason(zeroAddress, 5n, 100n, 1n)).toBe('TNR: invalid SR address')
  expect(await reason(stranger.address, 5n, 100n, 1n)).toBe('TNR: invalid SR')
  expect(await reason(fx.secretRegistry, 5n, 100n, 0n)).toBe('TNR: invalid TN limit')
  expect(await reason(fx.secretRegistry, 5n, 6n, 1n)).toBeNull()
})

test('anyone can register a token: TokenNetworkCreated is emitted and the new network is set up from the registry', async () => {
  const registry = await newRegistry(3n)
  const token = await newToken()
  const { result } = await simulateCreate(registry, token, 100n, 1000n)
  const receipt = await create(registry, token, 100n, 1000n)
  const [event] = parseEventLogs({ abi: TokenNetworkRegistry.abi, eventName: 'TokenNetworkCreated', logs: receipt.logs })
  expect(event!.args.token_address).toBe(token)
  const tokenNetwork = event!.args.token_network_address
  expect(tokenNetwork).toBe(result)
  expect(
    await fx.controller.client.readContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName: 'token_to_token_networks', args: [token] }),
  ).toBe(tokenNetwork)
  expect(await read(registry, 'token_network_created')).toBe(1n)

  const tn = <
    F extends
      | 'token'
      | 'secret_registry'
      | 'settlement_timeout_min'
      | 'settlement_timeout_max'
      | 'controller'
      | 'channel_participant_deposit_limit'
      | 'token_network_deposit_limit',
  >(
    functionName: F,
  ) => fx.controller.client.readContract({ address: tokenNetwork, abi: TokenNetwork.abi, functionName })
  expect(await tn('token')).toBe(token)
  expect(await tn('secret_registry')).toBe(fx.secretRegistry)
  expect(await tn('settlement_timeout_min')).toBe(SETTLE_TIMEOUT_MIN)
  expect(await tn('settlement_timeout_max')).toBe(SETTLE_TIMEOUT_MAX)
  // The registry's controller (not the caller who registered the token) controls the new network.
  expect(await tn('controller')).toBe(fx.controller.address)
  expect(await tn('channel_participant_deposit_limit')).toBe(100n)
  expect(await tn('token_network_deposit_limit')).toBe(1000n)
})

test('an unregistered token maps to the zero address', async () => {
  expect(
    await fx.controller.client.readContract({
      address: fx.registry,
      abi: TokenNetworkRegistry.abi,
      functionName: 'token_to_token_networks',
      args: [await newToken()],
    }),
  ).toBe(zeroAddress)
})

test('invariant 5: a token can be registered only once', async () => {
  const registry = await newRegistry(3n)
  const token = await newToken()
  await create(registry, token)
  await expectRevert(simulateCreate(registry, token, 100n, 1000n), 'TNR: token already registered')
})

test('invariant 5: the registry refuses the (max + 1)-th token network', async () => {
  const registry = await newRegistry(2n)
  await create(registry, await newToken())
  await create(registry, await newToken())
  await expectRevert(simulateCreate(registry, await newToken(), 100n, 1000n), 'TNR: registry full')
})

test('the TokenNetwork constructor checks the token and limits, and its reason passes through the registry', async () => {
  const registry = await newRegistry(5n)
  const token = await newToken()
  await expectRevert(simulateCreate(registry, stranger.address, 100n, 1000n), 'TN: invalid token contract')
  await expectRevert(simulateCreate(registry, zeroAddress, 100n, 1000n), 'TN: invalid token address')
  await expectRevert(simulateCreate(registry, await deployRaw(fx.controller.client, fakeTokenBytecode(null)), 100n, 1000n), 'TN: no supply for token')
  await expectRevert(simulateCreate(registry, token, 0n, 1000n), 'TN: invalid participant limit')
  await expectRevert(simulateCreate(registry, token, 100n, 0n), 'TN: invalid network deposit limit')
  await expectRevert(simulateCreate(registry, token, 1001n, 1000n), 'TN: invalid deposit limits')
})

test('createERC20TokenNetworkWithoutLimits creates a network with both deposit limits at MAX', async () => {
  const token = await newToken()
  const receipt = await mined(
    stranger.client,
    await stranger.client.writeContract({
      address: fx.registry,
      abi: TokenNetworkRegistry.abi,
      functionName: 'createERC20TokenNetworkWithoutLimits',
      args: [token],
    }),
  )
  const [event] = parseEventLogs({ abi: TokenNetworkRegistry.abi, eventName: 'TokenNetworkCreated', logs: receipt.logs })
  const tokenNetwork = event!.args.token_network_address
  expect(await fx.controller.client.readContract({ address: tokenNetwork, abi: TokenNetwork.abi, functionName: 'channel_participant_deposit_limit' })).toBe(
    MAX_UINT256,
  )
  expect(await fx.controller.client.readContract({ address: tokenNetwork, abi: TokenNetwork.abi, functionName: 'token_network_deposit_limit' })).toBe(
    MAX_UINT256,
  )
})

test('invariant 5: only the controller can remove the limit on token networks', async () => {
  const registry = await newRegistry(1n)
  await expectRevert(
    stranger.client.simulateContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName: 'removeLimits' }),
    'Can only be called by controller',
  )
  await mined(
    fx.controller.client,
    await fx.controller.client.writeContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName: 'removeLimits' }),
  )
  expect(await read(registry, 'max_token_networks')).toBe(MAX_UINT256)
})

test('invariant 5: after removeLimits the registry is no longer full, but only networks without deposit limits are accepted', async () => {
  const registry = await newRegistry(1n)
  await create(registry, await newToken())
  await mined(
    fx.controller.client,
    await fx.controller.client.writeContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName: 'removeLimits' }),
  )
  const token = await newToken()
  await expectRevert(simulateCreate(registry, token, 100n, MAX_UINT256), 'TNR: limits must be set to MAX_INT')
  await expectRevert(simulateCreate(registry, token, MAX_UINT256, 1000n), 'TNR: limits must be set to MAX_INT')
  await create(registry, token, MAX_UINT256, MAX_UINT256)
  await mined(
    stranger.client,
    await stranger.client.writeContract({
      address: registry,
      abi: TokenNetworkRegistry.abi,
      functionName: 'createERC20TokenNetworkWithoutLimits',
      args: [await newToken()],
    }),
  )
  expect(await read(registry, 'token_network_created')).toBe(3n)
})

test('the controller can hand its role to another address, which then controls the registry and its new networks', async () => {
  const registry = await newRegistry(1n)
  await expectRevert(
    stranger.client.simulateContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName: 'changeController', args: [stranger.address] }),
    'Can only be called by controller',
  )
  await mined(
    fx.controller.client,
    await fx.controller.client.writeContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName: 'changeController', args: [stranger.address] }),
  )
  expect(await read(registry, 'controller')).toBe(stranger.address)
  await expectRevert(
    fx.controller.client.simulateContract({ address: registry, abi: TokenNetworkRegistry.abi, functionName: 'removeLimits' }),
    'Can only be called by controller',
  )
  const receipt = await create(registry, await newToken())
  const [event] = parseEventLogs({ abi: TokenNetworkRegistry.abi, eventName: 'TokenNetworkCreated', logs: receipt.logs })
  expect(await fx.controller.client.readContract({ address: event!.args.token_network_address, abi: TokenNetwork.abi, functionName: 'controller' })).toBe(
    stranger.address,
  )
})

test('the shared Utils views are exposed: signature prefix, MAX_SAFE_UINT256, contractExists', async () => {
  const c = fx.controller.client
  expect(await c.readContract({ address: fx.registry, abi: TokenNetworkRegistry.abi, functionName: 'signature_prefix' })).toBe('\x19Ethereum Signed Message:\n')
  expect(await c.readContract({ address: fx.registry, abi: TokenNetworkRegistry.abi, functionName: 'MAX_SAFE_UINT256' })).toBe(MAX_UINT256)
  expect(await c.readContract({ address: fx.registry, abi: TokenNetworkRegistry.abi, functionName: 'contractExists', args: [fx.secretRegistry] })).toBe(true)
  expect(await c.readContract({ address: fx.registry, abi: TokenNetworkRegistry.abi, functionName: 'contractExists', args: [stranger.address] })).toBe(false)
})
