import { createPublicClient, createWalletClient, custom, maxUint256, type Account, type Address, type Chain, type TestClient, type Transport } from 'viem'
import { getAutomine, getChainId, mine } from 'viem/actions'
import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { createTransactionQueue } from '../chain/transactionQueue.ts'
import { memoryProgress } from './deployProgress.ts'
import { deployPlan, raidenDefaults } from './deployPlan.ts'
import { runDeployment, type DeployContractsError } from './deployRunner.ts'
import { deploymentOf } from './deploymentOfPlan.ts'

export { DeployContractsError } from './deployRunner.ts'
export { serviceTokenSymbol, tokenSupply } from './deployPlan.ts'

/**
 * The deployment of a test chain (`sluice chain`, `sluice devnet`, every test run): the same steps as `sluice deploy`
 * (deployPlan.ts, deployRunner.ts) with a test chain's parameters, nothing kept on disk, and the test tokens left
 * unregistered (the devnet registers them itself, tests as they need).
 */

/** Settle timeout bounds of raiden-contracts' test deployments (docs/protocol.md §1.3), in blocks. */
export const settlementTimeoutMin = 5n
export const settlementTimeoutMax = 100_000n

/** ServiceRegistry parameters: raiden-contracts' test constants (`tests/utils/constants.py`), also its 0.40 testnets'. */
export const serviceRegistryParameters = raidenDefaults.serviceRegistry

export const testTokens = [
  { symbol: 'TTT', name: 'Test Token' },
  { symbol: 'TT2', name: 'Test Token 2' },
] as const

/** Any anvil client with an account: sluice's own (`createDevnetClient`) or a test's. */
export type DeployContractsClient = TestClient<'anvil', Transport, Chain, Account, false>

export type DeployContractsParameters = {
  /** Recorded in the deployment, for nodes to reach the chain. */
  rpcUrl: string
  /** How many token networks the registry accepts; 1000 by default. */
  maxTokenNetworks?: bigint
  /** UserDeposit's cap on all deposits together; no cap (2^256-1) by default. */
  userDepositLimit?: bigint
}

/** The deployment, with the test tokens known by symbol. */
export type DeployContractsReturnType = Deployment & { tokens: Record<(typeof testTokens)[number]['symbol'], Address> }

export type DeployContractsErrorType = DeployContractsError

/**
 * Deploys the Raiden 0.40 contracts, the service token and the test tokens from the client's account, and
 * returns the deployment (docs/architecture.md, the deployment file).
 *
 * Fast: on an anvil that mines each transaction as it comes, a step goes as soon as its dependencies are broadcast,
 * and the receipts are awaited together; on one that mines on an interval, each wave of steps whose dependencies are
 * mined is sent at once and mined at once (four blocks), instead of waiting for the next tick.
 */
export async function deployContracts(
  client: DeployContractsClient,
  { rpcUrl, maxTokenNetworks = 1000n, userDepositLimit = maxUint256 }: DeployContractsParameters,
): Promise<DeployContractsReturnType> {
  const [chainId, automine] = await Promise.all([getChainId(client), getAutomine(client)])
  const chain = chainClientOf(client, chainId)
  const plan = deployPlan(
    {
      settleTimeoutMin: settlementTimeoutMin,
      settleTimeoutMax: settlementTimeoutMax,
      maxTokenNetworks,
      userDepositWholeLimit: userDepositLimit,
      serviceRegistry: serviceRegistryParameters,
      testTokens,
      registerTestTokens: false,
      tokens: [],
    },
    { deployer: chain.address, chainId },
  )
  const queue = createTransactionQueue(chain)
  try {
    const run = await runDeployment({
      chain,
      queue,
      plan,
      progress: memoryProgress(),
      ...(automine ? { minedOnBroadcast: true } : { afterBroadcast: async () => void (await mine(client, { blocks: 1 })) }),
    })
    return (await deploymentOf(chain.publicClient, plan, run, { chainId, rpcUrl })) as DeployContractsReturnType
  } finally {
    await queue.stop()
  }
}

/** The transaction queue's view of a test client: its requests (and its account) through viem's clients. */
function chainClientOf(client: DeployContractsClient, chainId: number): ChainClient {
  const transport = custom({ request: (args) => client.request(args as never) }, { retryCount: 0 })
  const options = { chain: client.chain, transport, cacheTime: 0, pollingInterval: 20 }
  return {
    chainId,
    address: client.account.address,
    publicClient: createPublicClient(options),
    // A test's account is a local one (privateKeyToAccount), as the queue's type says.
    walletClient: createWalletClient({ ...options, account: client.account }) as ChainClient['walletClient'],
    signPacked: () => {
      throw new Error('deployContracts signs no Raiden message')
    },
    // The test client's own transport: no endpoints of ours to tell about or close.
    rpcHealth: () => undefined,
    close: async () => {},
  }
}
