// A private anvil with the full deployment, and chain clients + transaction queues of a few funded accounts.
import type { Hex } from 'viem'
import { createChainClient, type ChainClient } from '../../../src/chain/chainClient.ts'
import { createTransactionQueue, type TransactionQueue } from '../../../src/chain/transactionQueue.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../../src/devnet/anvil.ts'
import { deployContracts, type DeployContractsReturnType } from '../../../src/devnet/deploy.ts'
import { createDevnetClient, type DevnetClient } from '../../../src/devnet/devnetClient.ts'

export type Account = { key: Hex; chain: ChainClient; queue: TransactionQueue }

export type ChainTestbed = {
  anvil: Anvil
  /** anvil key 0: the deployer; also mines, snapshots and sets balances. */
  devnet: DevnetClient
  deployment: DeployContractsReturnType
  /** anvil keys 1..n. */
  accounts: Account[]
  account(key: Hex): Promise<Account>
  stop(): Promise<void>
}

/** Starts anvil and deploys every contract; receipts are polled every 20 ms. */
export async function startChainTestbed({ accounts = 3 }: { accounts?: number } = {}): Promise<ChainTestbed> {
  const anvil = await startAnvil()
  try {
    const devnet = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
    const deployment = await deployContracts(devnet, { rpcUrl: anvil.rpcUrl })
    const account = async (key: Hex): Promise<Account> => {
      const chain = await createChainClient({ rpcUrl: anvil.rpcUrl, privateKey: key, pollingInterval: 20 })
      return { key, chain, queue: createTransactionQueue(chain) }
    }
    const list = await Promise.all(anvilKeys.slice(1, 1 + accounts).map(account))
    return { anvil, devnet, deployment, accounts: list, account, stop: () => anvil.stop() }
  } catch (e) {
    await anvil.stop()
    throw e
  }
}
