import { createTestClient, defineChain, http, publicActions, walletActions, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'

export type CreateDevnetClientParameters = {
  rpcUrl: string
  /** The account that signs and pays; one of anvil's funded keys on a dev chain. */
  privateKey: Hex
  /** anvil's `--chain-id`; 31337 by default. */
  chainId?: number
}

/**
 * A viem client for an anvil chain that reads, sends transactions and uses anvil's own RPCs (mine, automine).
 * cacheTime 0, because viem would otherwise serve a stale block number right after a mine (docs/decisions/0017-toolchain.md).
 */
export function createDevnetClient({ rpcUrl, privateKey, chainId = 31337 }: CreateDevnetClientParameters) {
  return createTestClient({
    chain: devnetChain(chainId, rpcUrl),
    mode: 'anvil',
    transport: http(rpcUrl),
    account: privateKeyToAccount(privateKey),
    cacheTime: 0,
    pollingInterval: 20,
  })
    .extend(publicActions)
    .extend(walletActions)
}

/**
 * The chain as viem wants it. Defined here rather than taken from `viem/chains`, whose import of every chain
 * costs the command line about a second at start.
 */
export function devnetChain(id: number, rpcUrl: string) {
  return defineChain({
    id,
    name: 'Anvil',
    nativeCurrency: { decimals: 18, name: 'Ether', symbol: 'ETH' },
    rpcUrls: { default: { http: [rpcUrl] } },
  })
}

export type DevnetClient = ReturnType<typeof createDevnetClient>
