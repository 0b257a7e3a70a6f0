import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Address, Hex } from 'viem'
import type { Deployment } from '../chain/deployment.ts'
import { serveNode, type ServedNode } from '../cli/servedNode.ts'
import { CliError } from '../cli/cliError.ts'
import type { Logger } from '../log/logger.ts'
import { openChannel } from '../node/actions/channels.ts'
import { createNode } from '../node/createNode.ts'
import { openLevelStorage } from '../storage/levelStorage.ts'
import { openMemoryStorage } from '../storage/memoryStorage.ts'
import { version } from '../version.ts'
import type { DevnetTransport } from './devnetTransport.ts'

/** Each side's deposit in the devnet's line of channels. */
export const CHANNEL_DEPOSIT = 100n * 10n ** 18n

export type StartNodesParameters = {
  rpcUrl: string
  deployment: Deployment
  keys: readonly Hex[]
  storage: 'level' | 'memory'
  /** Where LevelDB stores go (`<dataDir>/nodes`). */
  dataDir: string
  transport: DevnetTransport
  /** Node i's REST API on PORT+i; 0 gives each a free port. */
  portBase: number
  /** Each node is added as soon as it serves, so that a failure half-way still stops those that run. */
  served: ServedNode[]
  log: Logger
  /** A pathfinding service the nodes tell of their channels (they route locally: docs/decisions/0073). */
  pathfindingServiceAddress?: string
}

/**
 * The devnet's nodes: one per key, each serving its REST API on 127.0.0.1, run until each has synced with the chain.
 * Made for a development chain: no confirmations, a look at the chain every 100 ms, short timeouts.
 */
export async function startNodes({
  rpcUrl,
  deployment,
  keys,
  storage,
  dataDir,
  transport,
  portBase,
  served,
  log,
  pathfindingServiceAddress,
}: StartNodesParameters): Promise<void> {
  await mkdir(join(dataDir, 'nodes'), { recursive: true })
  const secp256k1 = await (await import('../cli/nativeSecp256k1.ts')).loadNativeSecp256k1()
  for (const [i, key] of keys.entries()) {
    const node = await createNode({
      rpc: rpcUrl,
      deployment,
      key,
      secp256k1,
      version,
      storage: (identity) => (storage === 'memory' ? openMemoryStorage(identity) : openLevelStorage(identity, { dataDir: join(dataDir, 'nodes') })),
      transport: ({ address }) => transport.create(key, address),
      confirmations: 0,
      pollingInterval: 100,
      defaultRevealTimeout: 10,
      defaultSettleTimeout: 40,
      backoff: { initialMs: 200, maxMs: 2_000 },
      ...(pathfindingServiceAddress ? { routingMode: 'local' as const, pathfindingServiceAddress } : {}),
    })
    served.push(await serveNode({ node, version, host: '127.0.0.1', port: portBase === 0 ? 0 : portBase + i, environment: 'development' }))
  }
  for (const [i, s] of served.entries()) log.info('node {index} {address}: REST API {url}', { index: i, address: s.node.address, url: s.apiUrl })
  log.info('waiting for the nodes to sync with the chain')
  await Promise.all(served.map((s) => s.run()))
  const failed = served.find((s) => s.node.status.status !== 'ready')
  if (failed) throw new CliError(`node ${failed.node.address} did not start`, 1)
  log.info('nodes ready: synced to block {syncedBlock}', { syncedBlock: served[0]!.node.status.syncedBlock })
}

/** Opens a channel line 0-1, 1-2, ... in `token`, funded on both sides, and waits until every node has seen it all. */
export async function openChannelLine(served: readonly ServedNode[], token: Address, head: () => Promise<bigint>): Promise<void> {
  for (let i = 0; i + 1 < served.length; i++) {
    const [a, b] = [served[i]!.node.client, served[i + 1]!.node.client]
    const { channel } = await openChannel(a, { token, partner: b.address, totalDeposit: CHANNEL_DEPOSIT })
    await b.waitForBlock(channel.openedBlock)
    await openChannel(b, { token, partner: a.address, totalDeposit: CHANNEL_DEPOSIT })
  }
  const last = await head()
  await Promise.all(served.map((s) => s.node.client.waitForBlock(last)))
}
