// A devnet whose blocks come from the test, as a public chain's come on their own: anvil mines nothing by itself
// (`--no-mining`) and a miner here mines a block every `blockMs`, at the base fee the test sets (a fee spike that
// lasts), paused and resumed on demand; and what a real chain does to transactions, on command: dropped from the
// pool, reorganised away. The contracts and TTT are deployed and registered as in startDevnet.
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { createChainClient, createTransactionQueue, mintTokens, registerToken } from '../../../src/chain/index.ts'
import { anvilKeys, startAnvil } from '../../../src/devnet/anvil.ts'
import { deployContracts } from '../../../src/devnet/deploy.ts'
import { createDevnetClient, type DevnetClient } from '../../../src/devnet/devnetClient.ts'
import type { Devnet } from './devnet.ts'

export type MinedDevnet = Devnet & {
  devnet: DevnetClient
  /** The base fee of every block from now on (wei); undefined: as EIP-1559 moves it. */
  setBaseFee(wei: bigint | undefined): void
  pause(): Promise<void>
  resume(): void
  /** Mines one block now, paused or not. */
  mineOne(): Promise<void>
  /** The transactions of `address` waiting in the pool. */
  pooled(address: Address): Promise<{ hash: Hex; nonce: number; maxFeePerGas: bigint }[]>
  drop(hash: Hex): Promise<void>
  /** Replaces the last `depth` blocks with empty ones: their transactions are gone (anvil keeps none of them). */
  reorg(depth: number): Promise<void>
  head(): Promise<bigint>
  /** Gives `key`'s account 10 ETH and `mint` TTT. */
  fund(key: Hex): Promise<void>
}

export async function startMinedDevnet(keys: readonly Hex[], { blockMs = 100, mint = 10n ** 21n } = {}): Promise<MinedDevnet> {
  const anvil = await startAnvil({ args: ['--no-mining'] })
  const devnet = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
  let baseFee: bigint | undefined
  let paused = false
  let stopped = false
  let mining: Promise<void> = Promise.resolve()
  const mineOne = async () => {
    if (baseFee !== undefined) await devnet.request({ method: 'anvil_setNextBlockBaseFeePerGas', params: [`0x${baseFee.toString(16)}`] } as never)
    await devnet.mine({ blocks: 1 })
  }
  const loop = async () => {
    while (!stopped) {
      await new Promise((r) => setTimeout(r, blockMs))
      if (!paused && !stopped) {
        mining = mineOne().catch(() => {})
        await mining
      }
    }
  }
  const running = loop()
  try {
    const deployment = await deployContracts(devnet, { rpcUrl: anvil.rpcUrl })
    const deployer = await createChainClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0], pollingInterval: 20 })
    const queue = createTransactionQueue(deployer)
    const token = deployment.tokens.TTT
    const { tokenNetwork } = await registerToken(deployer, queue, { registry: deployment.contracts.TokenNetworkRegistry.address, token })
    const fund = async (key: Hex) => {
      await devnet.setBalance({ address: privateKeyToAddress(key), value: 10n ** 19n })
      await mintTokens(deployer, queue, { token, amount: mint, to: privateKeyToAddress(key) })
    }
    for (const key of keys) await fund(key)
    const dataDir = await mkdtemp(join(tmpdir(), 'sluice-mined-'))
    return {
      anvil,
      devnet,
      deployment,
      token,
      tokenNetwork,
      channelName: `sluice-mined-${Math.random()}`,
      dataDir,
      setBaseFee: (wei) => {
        baseFee = wei
      },
      async pause() {
        paused = true
        await mining
      },
      resume: () => {
        paused = false
      },
      async mineOne() {
        await mining
        mining = mineOne()
        await mining
      },
      async pooled(address) {
        const content = (await devnet.request({ method: 'txpool_content', params: [] } as never)) as {
          pending: Record<string, Record<string, { hash: Hex; nonce: Hex; maxFeePerGas?: Hex; gasPrice?: Hex }>>
          queued: Record<string, Record<string, { hash: Hex; nonce: Hex; maxFeePerGas?: Hex; gasPrice?: Hex }>>
        }
        const of = (part: typeof content.pending) => Object.entries(part).find(([a]) => a.toLowerCase() === address.toLowerCase())?.[1] ?? {}
        return [...Object.values(of(content.pending)), ...Object.values(of(content.queued))].map((t) => ({
          hash: t.hash,
          nonce: Number(t.nonce),
          maxFeePerGas: BigInt(t.maxFeePerGas ?? t.gasPrice ?? '0x0'),
        }))
      },
      drop: async (hash) => void (await devnet.request({ method: 'anvil_dropTransaction', params: [hash] } as never)),
      async reorg(depth) {
        const wasPaused = paused
        paused = true
        await mining
        await devnet.request({ method: 'anvil_reorg', params: [depth, []] } as never)
        paused = wasPaused
      },
      head: () => devnet.getBlockNumber(),
      fund,
      async stop() {
        await queue.stop()
        stopped = true
        await running
        await anvil.stop()
      },
    }
  } catch (e) {
    stopped = true
    await running
    await anvil.stop()
    throw e
  }
}
