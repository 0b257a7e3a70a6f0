import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { createChainClient, createTransactionQueue, mintTokens, registerToken } from '../../../src/chain/index.ts'
import { anvilKeys, startAnvil, type Anvil, type StartAnvilParameters } from '../../../src/devnet/anvil.ts'
import { deployContracts, type DeployContractsReturnType } from '../../../src/devnet/deploy.ts'
import { createDevnetClient } from '../../../src/devnet/devnetClient.ts'
import { createNode } from '../../../src/node/createNode.ts'
import type { NodeConfig } from '../../../src/node/nodeConfig.ts'
import type { SluiceNode } from '../../../src/node/sluiceNode.ts'
import { openLevelStorage } from '../../../src/storage/levelStorage.ts'
import { openMemoryStorage } from '../../../src/storage/memoryStorage.ts'
import { createBroadcastChannelTransport } from '../../../src/transport/broadcastChannelTransport.ts'
import { nativeCurve } from '../../support/curve.ts'

export type Devnet = {
  anvil: Anvil
  deployment: DeployContractsReturnType
  token: Address
  tokenNetwork: Address
  channelName: string
  dataDir: string
  stop(): Promise<void>
}

/**
 * anvil with every contract deployed and the test token TTT registered; nodes' keys get minted tokens. `anvil` says
 * where it listens (another address than 127.0.0.1, for hosts in network namespaces) and how it mines.
 */
export async function startDevnet(keys: readonly Hex[], mint = 10n ** 21n, anvilParameters: StartAnvilParameters = {}): Promise<Devnet> {
  const anvil = await startAnvil(anvilParameters)
  const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
  const deployment = await deployContracts(client, { rpcUrl: anvil.rpcUrl })
  const deployer = await createChainClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0], pollingInterval: 50 })
  const queue = createTransactionQueue(deployer)
  const token = deployment.tokens.TTT
  const { tokenNetwork } = await registerToken(deployer, queue, { registry: deployment.contracts.TokenNetworkRegistry.address, token })
  for (const key of keys) await mintTokens(deployer, queue, { token, amount: mint, to: privateKeyToAddress(key) })
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-it-'))
  return { anvil, deployment, token, tokenNetwork, channelName: `sluice-it-${Math.random()}`, dataDir, stop: () => anvil.stop() }
}

export type StartNodeOptions = { durable?: boolean } & Partial<NodeConfig>

/** The config of a node on the devnet: BroadcastChannel transport, memory or LevelDB storage, no confirmations, fast polling. */
export function devnetNodeConfig(net: Devnet, key: Hex, options: StartNodeOptions = {}): NodeConfig {
  const { durable, ...rest } = options
  return {
    rpc: net.anvil.rpcUrl,
    deployment: net.deployment,
    key,
    storage: (identity) => (durable ? openLevelStorage(identity, { dataDir: net.dataDir }) : openMemoryStorage(identity)),
    transport: ({ address }) => createBroadcastChannelTransport({ address, channelName: net.channelName }),
    confirmations: 0,
    pollingInterval: 50,
    defaultRevealTimeout: 10,
    defaultSettleTimeout: 40,
    backoff: { initialMs: 100, maxMs: 1000 },
    secp256k1: nativeCurve,
    ...rest,
  }
}

/** A node on the devnet (devnetNodeConfig), created and run until it is ready. */
export async function startNode(net: Devnet, key: Hex, options: StartNodeOptions = {}): Promise<SluiceNode> {
  const node = await createNode(devnetNodeConfig(net, key, options))
  await node.run()
  return node
}
