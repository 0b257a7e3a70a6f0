import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type Address,
  type Chain,
  type Hex,
  type PrivateKeyAccount,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { signPackedSync } from '../protocol/signature.ts'
import { ChainIdMismatchError, ChainRpcError } from './errors.ts'

export type CreateChainClientParameters = {
  /** The JSON-RPC endpoint; optional when `transport` is given. */
  rpcUrl?: string
  /** The node's key: it pays for transactions and signs the Raiden messages they carry. */
  privateKey: Hex
  /** Checked against the endpoint's eth_chainId when given; otherwise taken from it. */
  chainId?: number
  /** Milliseconds between polls for receipts (and the default of the block watcher). 4000 by default. */
  pollingInterval?: number
  /** Replaces `http(rpcUrl)`: an EIP-1193 provider (`custom`), or a test's instrumented transport. */
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
}

export type CreateChainClientReturnType = ChainClient

export type CreateChainClientErrorType = ChainIdMismatchError | ChainRpcError

/**
 * Creates the viem clients of one node account over http (or the given transport) and learns the chain id
 * from the endpoint. The chain is defined here from its id: importing `viem/chains` would pull every chain
 * into the worker bundle. cacheTime 0: the block watcher and the nonce must never see a stale block number
 * (viem caches it for the polling interval otherwise; docs/decisions/0017-toolchain.md).
 */
export async function createChainClient({
  rpcUrl,
  privateKey,
  chainId,
  pollingInterval = 4_000,
  transport: given,
}: CreateChainClientParameters): Promise<CreateChainClientReturnType> {
  if (!given && !rpcUrl) throw new TypeError('createChainClient needs rpcUrl or transport')
  const transport = given ?? http(rpcUrl)
  let actual: number
  try {
    actual = await createPublicClient({ transport, cacheTime: 0 }).getChainId()
  } catch (e) {
    throw new ChainRpcError('eth_chainId', e)
  }
  if (chainId !== undefined && chainId !== actual) throw new ChainIdMismatchError(chainId, actual)

  const chain = defineChain({
    id: actual,
    name: `chain ${actual}`,
    nativeCurrency: { decimals: 18, name: 'Ether', symbol: 'ETH' },
    rpcUrls: { default: { http: rpcUrl ? [rpcUrl] : [] } },
  })
  const account = privateKeyToAccount(privateKey)
  const publicClient = createPublicClient({ chain, transport, cacheTime: 0, pollingInterval })
  const walletClient = createWalletClient({ chain, transport, account, cacheTime: 0, pollingInterval })
  return {
    chainId: actual,
    address: account.address,
    publicClient,
    walletClient,
    signPacked: (data) => signPackedSync(privateKey, data),
  }
}
