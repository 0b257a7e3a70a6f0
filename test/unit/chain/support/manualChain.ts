// A private anvil that mines only when the test says so, for the transaction queue's fault tests: blocks on demand,
// a base fee the test sets for each block, dropped transactions and reorgs (anvil's own methods), an endpoint in front
// that fails or swallows on command (test/support/faultyRpc.ts), and accounts with a queue over a journal the test
// keeps (a second queue over the same journal is the node after a restart).
import { createPublicClient, http, parseEther, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { createChainClient, type ChainClient } from '../../../../src/chain/chainClient.ts'
import { memoryJournal, type TransactionJournal } from '../../../../src/chain/transactionJournal.ts'
import { createTransactionQueue, type CreateTransactionQueueParameters, type TransactionQueue } from '../../../../src/chain/transactionQueue.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../../../src/devnet/anvil.ts'
import { createDevnetClient, type DevnetClient } from '../../../../src/devnet/devnetClient.ts'
import { startFaultyRpc, type FaultyRpc } from '../../../support/faultyRpc.ts'

export const gwei = 10n ** 9n

export type ManualChain = {
  anvil: Anvil
  /** anvil key 0: mines, sets balances and base fees, drops and reorganises. */
  devnet: DevnetClient
  /** In front of anvil: what the queues talk to. */
  endpoint: FaultyRpc
  /** Mines one block, at `baseFee` (wei) when given. */
  mine(baseFee?: bigint): Promise<void>
  /**
   * Mines a block every `everyMs` until `until` settles (each at the base fee `baseFee()` gives, when it gives one),
   * and returns what it settled with.
   */
  mineUntil<T>(until: Promise<T>, options?: { everyMs?: number; baseFee?: () => bigint | undefined; limit?: number }): Promise<T>
  head(): Promise<bigint>
  /** A funded account (10 ETH) with a queue over `journal` (a fresh one by default) talking to the endpoint. */
  account(options?: Omit<CreateTransactionQueueParameters, 'journal'> & { journal?: TransactionJournal; key?: Hex }): Promise<QueueAccount>
  stop(): Promise<void>
}

export type QueueAccount = { key: Hex; address: Address; chain: ChainClient; queue: TransactionQueue; journal: TransactionJournal }

export async function startManualChain(anvilArgs: string[] = []): Promise<ManualChain> {
  const anvil = await startAnvil({ args: ['--no-mining', ...anvilArgs] })
  const endpoint = await startFaultyRpc(anvil.rpcUrl)
  const devnet = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
  const reader = createPublicClient({ transport: http(anvil.rpcUrl), cacheTime: 0 })
  const mine = async (baseFee?: bigint) => {
    if (baseFee !== undefined) await devnet.request({ method: 'anvil_setNextBlockBaseFeePerGas', params: [`0x${baseFee.toString(16)}`] } as never)
    await devnet.mine({ blocks: 1 })
  }
  return {
    anvil,
    devnet,
    endpoint,
    mine,
    async mineUntil(until, { everyMs = 30, baseFee, limit = 400 } = {}) {
      let settled = false
      const done = until.finally(() => (settled = true))
      done.catch(() => {})
      for (let i = 0; !settled; i++) {
        if (i >= limit) throw new Error(`not settled after ${limit} blocks`)
        await new Promise((r) => setTimeout(r, everyMs))
        if (!settled) await mine(baseFee?.())
      }
      return done
    },
    head: () => reader.getBlockNumber(),
    async account({ journal = memoryJournal(), key = generatePrivateKey(), ...options } = {}) {
      const address = privateKeyToAddress(key)
      await devnet.setBalance({ address, value: parseEther('10') })
      const chain = await createChainClient({ rpcUrl: endpoint.url, privateKey: key, pollingInterval: 20 })
      return { key, address, chain, journal, queue: createTransactionQueue(chain, { journal, ...options }) }
    },
    async stop() {
      await endpoint.close()
      await anvil.stop()
    },
  }
}
