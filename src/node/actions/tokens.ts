import { BaseError, getAddress, HttpRequestError, isAddressEqual, parseAbi, TimeoutError, zeroAddress, type Address } from 'viem'
import { ChainRpcError, readRegistryLimits, readTokenNetworkOf, registerToken as sendRegisterToken } from '../../chain/index.ts'
import { tokenNetworkOf } from '../../protocol/state/access.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import { ConflictError, DisabledInProductionError, LimitReachedError } from '../errors.ts'
import type { NodeClient } from './client.ts'

/**
 * Tokens and their token networks: what the node knows from the registry's events, and registering a new token
 * with the checks Raiden's `RestAPI.register_token` makes first.
 */

/** Every token registered in the node's registry that the node has synced, EIP-55, in registration order. */
export function knownTokens(state: NodeState): Address[] {
  return Object.values(state.tokenNetworks).map((t) => getAddress(t.token))
}

/** The token network of `token` as the node knows it, or undefined. */
export type RegisterTokenOptions = {
  /** `production` refuses registration (501), as the Raiden node does on its default, the main network. */
  environment?: 'development' | 'production'
}

const totalSupplyAbi = parseAbi(['function totalSupply() view returns (uint256)'])

/**
 * Registers `token` in the node's registry (its TokenNetwork is created without deposit limits, as Raiden's REST
 * registration does) and returns the token network once the node has synced it. Refused before any
 * transaction: in production, the zero address, a token already registered, an address without code, a full
 * registry (LimitReachedError) and a contract without `totalSupply()`.
 */
export async function registerToken(client: NodeClient, token: Address, { environment = 'development' }: RegisterTokenOptions = {}): Promise<Address> {
  if (environment === 'production') throw new DisabledInProductionError('Registering a new token is currently disabled in production mode')
  if (isAddressEqual(token, zeroAddress)) throw new ConflictError('token_address must be non-zero')
  const registry = client.config.deployment.contracts.TokenNetworkRegistry.address
  // Two registrations of one token at once: the second waits and finds it registered.
  return client.queue.exclusive(`register:${token}`.toLowerCase(), async () => {
    if (tokenNetworkOf(client.state, token) || (await readTokenNetworkOf(client.chain, { registry, token })))
      throw new ConflictError('Token already registered')
    const { publicClient } = client.chain
    const code = await publicClient.getCode({ address: token }).catch((e: unknown) => {
      throw new ChainRpcError('eth_getCode', e)
    })
    if (!code || code === '0x') throw new ConflictError(`Address ${token} does not contain code`)
    const { maxTokenNetworks, tokenNetworksCreated } = await readRegistryLimits(client.chain, { registry })
    if (tokenNetworksCreated >= maxTokenNetworks) throw new LimitReachedError(`Number of token networks will exceed the maximum of ${maxTokenNetworks}`)
    const erc20 = await publicClient.readContract({ address: token, abi: totalSupplyAbi, functionName: 'totalSupply' }).then(
      () => true,
      (e: unknown) => {
        // A revert or an empty answer says "no totalSupply()"; an unreachable RPC says nothing about the token.
        if (e instanceof BaseError && e.walk((c) => c instanceof HttpRequestError || c instanceof TimeoutError)) throw new ChainRpcError('totalSupply', e)
        return false
      },
    )
    if (!erc20) throw new ConflictError('Given token address does not follow the ERC20 standard (missing totalSupply())')
    // Gas (402) and the contract's own refusals (409, e.g. a token with no supply) come from the transaction queue.
    const sent = await sendRegisterToken(client.chain, client.queue, { registry, token })
    await client.waitForBlock(sent.receipt.blockNumber)
    if (!tokenNetworkOf(client.state, token)) throw new ConflictError(`Token network ${sent.tokenNetwork} was created but not synced`)
    return sent.tokenNetwork
  })
}
