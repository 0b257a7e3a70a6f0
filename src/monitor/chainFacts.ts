import type { Address } from 'viem'
import { ChainRpcError } from '../chain/errors.ts'
import { read, readChannelIdentifier, readChannelInfo, type ChainReader } from '../chain/reads.ts'
import { TokenNetwork, TokenNetworkRegistry, UserDeposit } from '../contracts/index.ts'
import type { RequestMonitoring, Signed } from '../protocol/messages/types.ts'
import type { ChainFacts } from './requestCheck.ts'

/** How long a token network found not to be the registry's is believed not to be (it may be registered later). */
const UNKNOWN_TOKEN_NETWORK_MS = 60_000

/**
 * Reads what a request's checks need from the chain, at the latest block: three calls at once (with a batching
 * transport, one HTTP request). Whether a token network is the registry's is remembered: a registry never replaces
 * the network of a token.
 */
export function createChainFacts(chain: ChainReader, { registry, userDeposit }: { registry: Address; userDeposit: Address }) {
  const known = new Set<string>()
  const unknownUntil = new Map<string, number>()

  async function tokenNetworkKnown(tokenNetwork: Address): Promise<boolean> {
    const key = tokenNetwork.toLowerCase()
    if (known.has(key)) return true
    if ((unknownUntil.get(key) ?? 0) > Date.now()) return false
    const code = await chain.publicClient.getCode({ address: tokenNetwork }).catch((e: unknown) => {
      throw new ChainRpcError('eth_getCode', e)
    })
    let isKnown = false
    if (code && code !== '0x') {
      // Any contract may answer token(); only the registry's own network for that token counts.
      const token = await read(chain, tokenNetwork, TokenNetwork.abi, 'token', []).catch(() => undefined)
      if (token) isKnown = (await read(chain, registry, TokenNetworkRegistry.abi, 'token_to_token_networks', [token])).toLowerCase() === key
    }
    if (isKnown) known.add(key)
    else {
      if (unknownUntil.size > 10_000) unknownUntil.clear()
      unknownUntil.set(key, Date.now() + UNKNOWN_TOKEN_NETWORK_MS)
    }
    return isKnown
  }

  return {
    /** The facts of `request`, whose balance proof `closing` signed. ChainRpcError when the chain cannot be read. */
    async forRequest(request: Signed<RequestMonitoring>, closing: Address): Promise<ChainFacts> {
      const bp = request.balance_proof
      const tokenNetwork = bp.token_network_address
      const requester = request.non_closing_participant
      const isKnown = await tokenNetworkKnown(tokenNetwork)
      if (!isKnown) return { tokenNetworkKnown: false, channelId: 0n, channelState: 'nonExistent', effectiveBalance: 0n }
      const [channelId, info, effectiveBalance] = await Promise.all([
        readChannelIdentifier(chain, { tokenNetwork, participant: closing, partner: requester }),
        readChannelInfo(chain, { tokenNetwork, channelId: bp.channel_identifier, participant1: closing, participant2: requester }),
        read(chain, userDeposit, UserDeposit.abi, 'effectiveBalance', [requester]),
      ])
      return { tokenNetworkKnown: true, channelId, channelState: info.state, effectiveBalance }
    },
  }
}

export type ChainFactsReader = ReturnType<typeof createChainFacts>
