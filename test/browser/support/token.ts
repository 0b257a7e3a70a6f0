import { getAddress, type Address, type Hex } from 'viem'
import { createChainClient, createTransactionQueue, mintTokens, registerToken } from '../../../src/chain/index.ts'
import type { Deployment } from '../../../src/chain/deployment.ts'
import { CustomToken, bytecode } from '../../../src/contracts/index.ts'
import { waitForReceipt } from '../../../src/chain/receipt.ts'

/**
 * A token of the calling test's own: deployed by `key` (funded with ETH), registered, and `minted` to `key`'s
 * account. Its own token keeps a test's channels apart from every other file's on the shared anvil.
 */
export async function deployTestToken(rpcUrl: string, deployment: Deployment, key: Hex, minted = 1000n): Promise<{ token: Address; tokenNetwork: Address }> {
  const chain = await createChainClient({ rpcUrl, privateKey: key, pollingInterval: 50 })
  const queue = createTransactionQueue(chain)
  const token = await deployToken(rpcUrl, key)
  const { tokenNetwork } = await registerToken(chain, queue, { registry: deployment.contracts.TokenNetworkRegistry.address, token })
  if (minted > 0n) await mintTokens(chain, queue, { token, amount: minted })
  return { token, tokenNetwork }
}

/** A CustomToken deployed by `key` (funded with ETH), not registered: for a test that registers it. */
export async function deployToken(rpcUrl: string, key: Hex): Promise<Address> {
  const chain = await createChainClient({ rpcUrl, privateKey: key, pollingInterval: 50 })
  const hash = await chain.walletClient.deployContract({ abi: CustomToken.abi, bytecode: bytecode.CustomToken, args: [10n ** 24n, 18, 'Test Token', 'TST'] })
  return getAddress((await waitForReceipt(chain.publicClient, hash, { timeout: 30_000, pollingInterval: 50 })).contractAddress!)
}
