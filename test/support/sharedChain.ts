// Accounts and token networks of a test's own on the run's anvil (test/globalSetup.ts), which every test file
// shares: a fresh key touches no other test's nonces, a token of its own leaves the deployment's tokens alone.
// No vitest imports: the caller passes inject('rpcUrl') and inject('deployment').
import { createTestClient, getAddress, http, parseEther, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { createChainClient, type ChainClient } from '../../src/chain/chainClient.ts'
import type { Deployment } from '../../src/chain/deployment.ts'
import { mintTokens } from '../../src/chain/erc20.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'
import { registerToken } from '../../src/chain/tokenNetworkActions.ts'
import { createTransactionQueue, type SentTransaction, type TransactionQueue } from '../../src/chain/transactionQueue.ts'
import { CustomToken, bytecode } from '../../src/contracts/index.ts'

export type FreshAccount = { key: Hex; address: Address; chain: ChainClient; queue: TransactionQueue; rpcUrl: string }

/** A new key with 10 ETH on the shared anvil (set with anvil_setBalance), with its chain client and queue. */
export async function freshAccount(rpcUrl: string, key: Hex = generatePrivateKey()): Promise<FreshAccount> {
  const address = privateKeyToAddress(key)
  await createTestClient({ mode: 'anvil', transport: http(rpcUrl) }).setBalance({ address, value: parseEther('10') })
  const chain = await createChainClient({ rpcUrl, privateKey: key, pollingInterval: 20 })
  return { key, address, chain, queue: createTransactionQueue(chain), rpcUrl }
}

/**
 * Deploys a new token and `owner` registers it: its TokenNetworkCreated is in `registered.receipt`. A throwaway
 * account deploys it (the queue cannot create contracts, and a send beside it would take the queue's nonce).
 */
export async function ownTokenNetwork(
  owner: FreshAccount,
  deployment: Deployment,
): Promise<{ token: Address; tokenNetwork: Address; registered: SentTransaction }> {
  const deployer = await freshAccount(owner.rpcUrl)
  const hash = await deployer.chain.walletClient.deployContract({
    abi: CustomToken.abi,
    bytecode: bytecode.CustomToken,
    args: [10n ** 27n, 18, 'Test Token', 'TST'],
  })
  const token = getAddress((await waitForReceipt(deployer.chain.publicClient, hash, { timeout: 20_000 })).contractAddress!)
  const registered = await registerToken(owner.chain, owner.queue, { registry: deployment.contracts.TokenNetworkRegistry.address, token })
  return { token, tokenNetwork: registered.tokenNetwork, registered }
}

/** Mints `amount` of `token` to `account` (CustomToken lets anyone mint to themselves). */
export async function mint(account: FreshAccount, token: Address, amount: bigint): Promise<void> {
  await mintTokens(account.chain, account.queue, { token, amount })
}
