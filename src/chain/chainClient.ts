import {
  createPublicClient,
  createWalletClient,
  defineChain,
  type Address,
  type Chain,
  type Hex,
  type PrivateKeyAccount,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { jsSecp256k1, type Secp256k1Engine } from '../protocol/secp256k1.ts'
import { signPackedSync } from '../protocol/signature.ts'
import { ChainIdMismatchError, ChainRpcError } from './errors.ts'
import { RpcEndpoints, type RequestProvider, type RpcEndpointsParameters, type RpcHealth } from './rpcEndpoints.ts'

export type CreateChainClientParameters = {
  /**
   * The JSON-RPC endpoints (http, https, ws or wss), used in this order: the next when one fails, the first again
   * once it answers (rpcEndpoints.ts). One is enough.
   */
  rpcUrl?: string | readonly string[]
  /** An EIP-1193 provider (the page's wallet) instead of `rpcUrl`, with the same retries and bounds. */
  provider?: RequestProvider
  /** Timeouts, retries and probes of the endpoints or the provider; `onChange` hears one going down and coming back. */
  endpoints?: Omit<RpcEndpointsParameters, 'urls' | 'provider'>
  /** The node's key: it pays for transactions and signs the Raiden messages they carry. */
  privateKey: Hex
  /** The curve engine `signPacked` signs with (the host's choice); the JS one for a client that signs nothing packed. */
  curve?: Secp256k1Engine
  /** Checked against the endpoint's eth_chainId when given; otherwise taken from it. */
  chainId?: number
  /** Milliseconds between polls for receipts (and the default of the block watcher). 4000 by default. */
  pollingInterval?: number
  /** Replaces the endpoints: a viem transport used as it is (a test's instrumented transport). */
  transport?: Transport
}

/** What the chain layer needs to read, send and sign: one per node account. */
export type ChainClient = {
  chainId: number
  /** The node's account: sender of every transaction and signer of every Raiden message. */
  address: Address
  publicClient: PublicClient<Transport, Chain>
  walletClient: WalletClient<Transport, Chain, PrivateKeyAccount>
  /** Signs packed Raiden data (EIP-191), as closeChannel, updateNonClosingBalanceProof and withdraws need. */
  signPacked(data: Hex): Hex
  /** The endpoints' health (which is in use, each one's last success and failure); undefined with a given `transport`. */
  rpcHealth(): RpcHealth | undefined
  /** Closes the endpoints' WebSockets (ws/wss), which would keep a stopped node's process alive; calls after it open them again. */
  close(): Promise<void>
}

export type CreateChainClientReturnType = ChainClient

export type CreateChainClientErrorType = ChainIdMismatchError | ChainRpcError

/**
 * Creates the viem clients of one node account over its endpoints (or the given transport) and learns the chain
 * id from them: every endpoint must serve `chainId` when given, else the first's (docs/decisions/0052). The chain
 * is defined here from its id: importing `viem/chains` would pull every chain into the worker bundle. cacheTime 0:
 * the block watcher and the nonce must never see a stale block number (viem caches it for the polling interval
 * otherwise; docs/decisions/0017-toolchain.md).
 */
export async function createChainClient({
  rpcUrl,
  provider,
  endpoints: tunables,
  privateKey,
  curve = jsSecp256k1,
  chainId,
  pollingInterval = 4_000,
  transport: given,
}: CreateChainClientParameters): Promise<CreateChainClientReturnType> {
  const urls = rpcUrl === undefined ? [] : typeof rpcUrl === 'string' ? [rpcUrl] : [...rpcUrl]
  if (!given && urls.length === 0 && !provider) throw new TypeError('createChainClient needs rpcUrl, provider or transport')
  let actual: number
  let transport: Transport
  let endpoints: RpcEndpoints | undefined
  if (given) {
    transport = given
    try {
      actual = await createPublicClient({ transport, cacheTime: 0 }).getChainId()
    } catch (e) {
      throw new ChainRpcError('eth_chainId', e)
    }
    if (chainId !== undefined && chainId !== actual) throw new ChainIdMismatchError(chainId, actual)
  } else {
    endpoints = new RpcEndpoints({ ...tunables, ...(provider ? { provider } : { urls }) })
    actual = await endpoints.start(chainId)
    transport = endpoints.transport
  }

  const chain = defineChain({
    id: actual,
    name: `chain ${actual}`,
    nativeCurrency: { decimals: 18, name: 'Ether', symbol: 'ETH' },
    rpcUrls: { default: { http: urls.filter((u) => /^https?:/i.test(u)) } },
  })
  const account = privateKeyToAccount(privateKey)
  const publicClient = createPublicClient({ chain, transport, cacheTime: 0, pollingInterval })
  const walletClient = createWalletClient({ chain, transport, account, cacheTime: 0, pollingInterval })
  return {
    chainId: actual,
    address: account.address,
    publicClient,
    walletClient,
    signPacked: (data) => signPackedSync(curve, privateKey, data),
    rpcHealth: () => endpoints?.health(),
    close: async () => endpoints?.close(),
  }
}
