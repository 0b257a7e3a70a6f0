import {
  getAddress,
  zeroAddress,
  type Abi,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type ContractFunctionReturnType,
  type Hex,
} from 'viem'
import { CustomToken, SecretRegistry, TokenNetwork, TokenNetworkRegistry, UserDeposit } from '../contracts/index.ts'
import type { ChainClient } from './chainClient.ts'
import { ChainRpcError } from './errors.ts'

/** What reads need: the public client, and the node's address as the default owner. */
export type ChainReader = Pick<ChainClient, 'publicClient' | 'address'>

/** TokenNetwork's ChannelState enum (docs/protocol.md §1.4.1). */
export const channelStates = ['nonExistent', 'opened', 'closed', 'settled', 'removed'] as const
export type OnchainChannelState = (typeof channelStates)[number]

export type ChannelInfo = {
  /** While open: the settle timeout; after close: close block + settle timeout; after settle: 0. */
  settleBlockNumber: bigint
  state: OnchainChannelState
}

export type ParticipantInfo = {
  deposit: bigint
  withdrawnAmount: bigint
  isTheCloser: boolean
  balanceHash: Hex
  nonce: bigint
  /** After settlement: the locksroot and amount kept for this participant's locks (unlock record). */
  locksroot: Hex
  lockedAmount: bigint
}

export type RegistryLimits = {
  settlementTimeoutMin: bigint
  settlementTimeoutMax: bigint
  maxTokenNetworks: bigint
  tokenNetworksCreated: bigint
}

export type TokenNetworkInfo = {
  token: Address
  settlementTimeoutMin: bigint
  settlementTimeoutMax: bigint
  channelParticipantDepositLimit: bigint
  tokenNetworkDepositLimit: bigint
  deprecated: boolean
}

export type UserDepositInfo = {
  token: Address
  totalDeposit: bigint
  balance: bigint
  /** Balance minus the planned withdraw: what services can still be paid from. */
  effectiveBalance: bigint
  /** The planned withdraw, if any: `amount` may be withdrawn from block `withdrawBlock` on. */
  withdrawPlan: { amount: bigint; withdrawBlock: bigint } | undefined
}

export async function readChannelInfo(
  chain: ChainReader,
  { tokenNetwork, channelId, participant1, participant2 }: { tokenNetwork: Address; channelId: bigint; participant1: Address; participant2: Address },
): Promise<ChannelInfo> {
  const [settleBlockNumber, state] = await read(chain, tokenNetwork, TokenNetwork.abi, 'getChannelInfo', [channelId, participant1, participant2])
  return { settleBlockNumber, state: channelStates[state] ?? 'nonExistent' }
}

/** The channel id of a pair (0 if they have no open or closed channel). */
export async function readChannelIdentifier(
  chain: ChainReader,
  { tokenNetwork, participant, partner }: { tokenNetwork: Address; participant: Address; partner: Address },
): Promise<bigint> {
  return read(chain, tokenNetwork, TokenNetwork.abi, 'getChannelIdentifier', [participant, partner])
}

export async function readParticipantInfo(
  chain: ChainReader,
  { tokenNetwork, channelId, participant, partner }: { tokenNetwork: Address; channelId: bigint; participant: Address; partner: Address },
): Promise<ParticipantInfo> {
  const [deposit, withdrawnAmount, isTheCloser, balanceHash, nonce, locksroot, lockedAmount] = await read(
    chain,
    tokenNetwork,
    TokenNetwork.abi,
    'getChannelParticipantInfo',
    [channelId, participant, partner],
  )
  return { deposit, withdrawnAmount, isTheCloser, balanceHash, nonce, locksroot, lockedAmount }
}

export async function readTokenBalance(chain: ChainReader, { token, owner = chain.address }: { token: Address; owner?: Address }): Promise<bigint> {
  return read(chain, token, CustomToken.abi, 'balanceOf', [owner])
}

export async function readAllowance(
  chain: ChainReader,
  { token, spender, owner = chain.address }: { token: Address; spender: Address; owner?: Address },
): Promise<bigint> {
  return read(chain, token, CustomToken.abi, 'allowance', [owner, spender])
}

/** ETH (native currency) balance in wei. */
export async function readNativeBalance(chain: ChainReader, { address = chain.address }: { address?: Address } = {}): Promise<bigint> {
  try {
    return await chain.publicClient.getBalance({ address })
  } catch (e) {
    throw new ChainRpcError('eth_getBalance', e)
  }
}

/** The token network of a token, or undefined when the token is not registered. */
export async function readTokenNetworkOf(chain: ChainReader, { registry, token }: { registry: Address; token: Address }): Promise<Address | undefined> {
  const tokenNetwork = await read(chain, registry, TokenNetworkRegistry.abi, 'token_to_token_networks', [token])
  return tokenNetwork === zeroAddress ? undefined : getAddress(tokenNetwork)
}

export async function readRegistryLimits(chain: ChainReader, { registry }: { registry: Address }): Promise<RegistryLimits> {
  const [settlementTimeoutMin, settlementTimeoutMax, maxTokenNetworks, tokenNetworksCreated] = await Promise.all([
    read(chain, registry, TokenNetworkRegistry.abi, 'settlement_timeout_min', []),
    read(chain, registry, TokenNetworkRegistry.abi, 'settlement_timeout_max', []),
    read(chain, registry, TokenNetworkRegistry.abi, 'max_token_networks', []),
    read(chain, registry, TokenNetworkRegistry.abi, 'token_network_created', []),
  ])
  return { settlementTimeoutMin, settlementTimeoutMax, maxTokenNetworks, tokenNetworksCreated }
}

export async function readTokenNetworkInfo(chain: ChainReader, { tokenNetwork }: { tokenNetwork: Address }): Promise<TokenNetworkInfo> {
  const [token, settlementTimeoutMin, settlementTimeoutMax, channelParticipantDepositLimit, tokenNetworkDepositLimit, deprecated] = await Promise.all([
    read(chain, tokenNetwork, TokenNetwork.abi, 'token', []),
    read(chain, tokenNetwork, TokenNetwork.abi, 'settlement_timeout_min', []),
    read(chain, tokenNetwork, TokenNetwork.abi, 'settlement_timeout_max', []),
    read(chain, tokenNetwork, TokenNetwork.abi, 'channel_participant_deposit_limit', []),
    read(chain, tokenNetwork, TokenNetwork.abi, 'token_network_deposit_limit', []),
    read(chain, tokenNetwork, TokenNetwork.abi, 'safety_deprecation_switch', []),
  ])
  return { token: getAddress(token), settlementTimeoutMin, settlementTimeoutMax, channelParticipantDepositLimit, tokenNetworkDepositLimit, deprecated }
}

export async function readUserDeposit(
  chain: ChainReader,
  { userDeposit, owner = chain.address }: { userDeposit: Address; owner?: Address },
): Promise<UserDepositInfo> {
  const [token, totalDeposit, balance, effectiveBalance, [amount, withdrawBlock]] = await Promise.all([
    read(chain, userDeposit, UserDeposit.abi, 'token', []),
    read(chain, userDeposit, UserDeposit.abi, 'total_deposit', [owner]),
    read(chain, userDeposit, UserDeposit.abi, 'balances', [owner]),
    read(chain, userDeposit, UserDeposit.abi, 'effectiveBalance', [owner]),
    read(chain, userDeposit, UserDeposit.abi, 'withdraw_plans', [owner]),
  ])
  return { token: getAddress(token), totalDeposit, balance, effectiveBalance, withdrawPlan: amount > 0n ? { amount, withdrawBlock } : undefined }
}

/** The block in which the secret of `secrethash` was registered on-chain, 0 if it was not. */
export async function readSecretRevealBlock(chain: ChainReader, { secretRegistry, secrethash }: { secretRegistry: Address; secrethash: Hex }): Promise<bigint> {
  return read(chain, secretRegistry, SecretRegistry.abi, 'getSecretRevealBlockHeight', [secrethash])
}

/** readContract at the latest block, failures as ChainRpcError naming the call. */
export async function read<const abi extends Abi, F extends ContractFunctionName<abi, 'view' | 'pure'>>(
  chain: ChainReader,
  address: Address,
  abi: abi,
  functionName: F,
  args: ContractFunctionArgs<abi, 'view' | 'pure', F>,
): Promise<ContractFunctionReturnType<abi, 'view' | 'pure', F>> {
  try {
    return (await chain.publicClient.readContract({ address, abi, functionName, args } as never)) as ContractFunctionReturnType<abi, 'view' | 'pure', F>
  } catch (e) {
    throw new ChainRpcError(`${functionName} of ${address}`, e)
  }
}
