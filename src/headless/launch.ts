/**
 * The one path from checked settings to a headless node with its REST API, in a Node.js process: `sluice serve`
 * runs it behind its flags, and @sluice/node's `startNode` behind its options (docs/decisions/0049-node-api.md).
 * Creates the node (LevelDB or memory storage, libp2p or BroadcastChannel transport, native secp256k1), hosts its
 * API over HTTP when `api` is given (serveNode) or in-process only (hostNode), and logs what the operator should
 * hear. The node is not running yet: `run()` does the first sync.
 *
 * Throws the node's own coded errors (CHAIN_RPC, DEPLOYMENT_MISMATCH, STORAGE_LOCKED, DUMP_REJECTED, STALE_STATE,
 * BACKUP_*, ...), API_PORT_IN_USE: each caller puts them in its own words (the CLI names its flags).
 */
import type { Hex } from 'viem'
import type { Deployment } from '../chain/deployment.ts'
import type { Environment } from '../api/context.ts'
import { hostNode, type HostedNode } from '../host/hostNode.ts'
import type { Logger } from '../log/logger.ts'
import { logNodeNotices } from '../log/nodeNotices.ts'
import { followSync } from '../log/syncProgress.ts'
import { createNode } from '../node/createNode.ts'
import type { FlagSettings, NodeConfig } from '../node/nodeConfig.ts'
import type { SluiceNode } from '../node/sluiceNode.ts'
import type { StorageDump } from '../storage/storage.ts'
import type { PgNodeStore } from '../storage/pgStorage.ts'
import { openLevelStorage } from '../storage/levelStorage.ts'
import { openMemoryStorage } from '../storage/memoryStorage.ts'
import { createBroadcastChannelTransport } from '../transport/broadcastChannelTransport.ts'
import { loadNativeSecp256k1 } from '../cli/nativeSecp256k1.ts'
import { serveNode, type ServeAccess, type ServedNode } from '../cli/servedNode.ts'
import { version } from '../version.ts'
import { libp2pLog, type DirectSettings, type TransportName } from './transport.ts'
import { resolvesPrivate } from '../transport/libp2p/privateNames.ts'

/** The node's settings that pass through to createNode as they are. */
export type LaunchNodeSettings = FlagSettings & Pick<NodeConfig, 'minServiceTokenBalance'>

export type LaunchParameters = {
  /** The chain's endpoints, in the order they are used. */
  rpc: readonly string[]
  deployment: Deployment
  privateKey: Hex
  /**
   * LevelDB files in `dataDir`, memory (gone when the node stops, as `sluice devnet --storage memory`), or a
   * PostgreSQL database under the store's lease, taken already (`sluice serve --database`, docs/decisions/0076).
   */
  storage: { dataDir: string } | 'memory' | { postgres: PgNodeStore }
  transport: TransportName
  relays: readonly string[]
  /** Direct paths with libp2p: where it listens, the addresses it announces, and private addresses dialled. */
  direct?: DirectSettings | undefined
  settings: LaunchNodeSettings
  /** A state dump restored into the store before the node starts; `from` names it in the log. */
  import?: { dump: StorageDump; from: string } | undefined
  /** Serve the REST API over HTTP there; without it the API is reached in-process only (`fetch`). */
  api?: { host: string; port: number; access: ServeAccess } | undefined
  environment: Environment
  log: Logger
  /** Told each failure of the chain's endpoints (`sluice serve --metrics` counts them). */
  onRpcFailure?: NodeConfig['onRpcFailure']
  /** Given the node once made, before its API is served and before it runs (`sluice serve --metrics` observes it). */
  onNode?: (node: SluiceNode) => void
}

export type LaunchedNode = HostedNode & {
  /** The REST API's base URL (http://host:port/api/v1) when it is served over HTTP. */
  apiUrl: string | undefined
  /** The libp2p peer id, with the libp2p transport. */
  peerId: string | undefined
  /** The store's lease, with a store in PostgreSQL (`held`: this instance is the active one; a metrics gauge shows it). */
  lease: { readonly held: boolean } | undefined
  /** The API answers 503, the HTTP server (if any) closes, the node stops, the log stops following it. Idempotent. */
  stop(): Promise<void>
}

/**
 * Loads the modules launchNode loads on demand (libp2p, the PostgreSQL store) and the native secp256k1, without
 * starting anything. `sluice serve --database` calls it before it takes the store's lease: loading them blocks the
 * process for up to a second on a busy machine, which a short lease (--lease-seconds 1) does not survive once held,
 * and which a standby would otherwise spend after its takeover rather than before.
 */
export async function loadLaunchModules(transport: LaunchParameters['transport'], postgres: boolean) {
  // libp2p 3.x needs Promise.withResolvers and a global WebSocket on Node 20: the polyfills load before it.
  if (transport === 'libp2p') await import('../transport/libp2p/nodePolyfills.ts')
  const [libp2p, pgStorage, secp256k1] = await Promise.all([
    transport === 'libp2p' ? import('../transport/libp2p/libp2pTransport.ts') : undefined,
    postgres ? import('../storage/pgStorage.ts') : undefined,
    loadNativeSecp256k1(),
  ])
  return { createLibp2pTransport: libp2p?.createLibp2pTransport, pgStorage, secp256k1 }
}

export async function launchNode(parameters: LaunchParameters): Promise<LaunchedNode> {
  const { rpc, deployment, privateKey, storage, transport, relays, settings, api, log } = parameters
  const { createLibp2pTransport, pgStorage, secp256k1 } = await loadLaunchModules(transport, typeof storage === 'object' && 'postgres' in storage)
  // The node starts its transport when it runs and stops it when it stops (node.stop -> delivery -> transport).
  const direct = parameters.direct
  const libp2p = createLibp2pTransport?.({
    privateKey,
    relays: [...relays],
    ...(direct
      ? { listen: direct.listen, announce: direct.announce, allowPrivateDirect: direct.allowPrivate, ...(direct.tls ? { listenTls: direct.tls } : {}) }
      : {}),
    resolvesPrivate,
    log: libp2pLog(log),
  })
  const node = await createNode({
    rpc,
    deployment: { ...deployment, rpcUrl: rpc[0]! },
    key: privateKey,
    // The native curve where its prebuilt binary loads (src/cli/nativeSecp256k1.ts): every signature of the node.
    secp256k1,
    storage: (identity) =>
      storage === 'memory'
        ? openMemoryStorage(identity)
        : 'postgres' in storage
          ? pgStorage!.openPgStorage(identity, { pool: storage.postgres.pool, lease: storage.postgres.lease })
          : openLevelStorage(identity, { dataDir: storage.dataDir }),
    transport: ({ address }) =>
      libp2p ??
      createBroadcastChannelTransport({
        address,
        channelName: `sluice-${deployment.chainId}-${deployment.contracts.TokenNetworkRegistry.address.toLowerCase()}`,
      }),
    ...definedOnly(settings),
    version,
    ...(parameters.import ? { import: parameters.import.dump } : {}),
    ...(parameters.onRpcFailure ? { onRpcFailure: parameters.onRpcFailure } : {}),
  })
  parameters.onNode?.(node)
  if (parameters.import) log.info('Imported the state dump {file}', { file: parameters.import.from })
  // With a standby beside it, /status says which one this is (`role`): active while it holds the store's lease.
  const lease = typeof storage === 'object' && 'postgres' in storage ? storage.postgres.lease : undefined
  const hostParameters = {
    node,
    version,
    environment: parameters.environment,
    ...(lease ? { role: () => (lease.held ? ('active' as const) : ('standby' as const)) } : {}),
  }
  let hosted: HostedNode | ServedNode
  try {
    hosted = api ? await serveNode({ ...hostParameters, host: api.host, port: api.port, access: api.access }) : hostNode(hostParameters)
  } catch (e) {
    await node.stop()
    throw e
  }
  const apiUrl = 'apiUrl' in hosted ? hosted.apiUrl : undefined

  const offNotices = logNodeNotices(node, log)
  const stopProgress = followSync(() => (node.status.status === 'syncing' ? node.status : undefined), { logger: log })
  log.info('Sluice node {address} on chain {chainId} ({environment}), data in {dataDir}', {
    address: node.address,
    chainId: deployment.chainId,
    environment: parameters.environment,
    dataDir: storage === 'memory' ? 'memory' : 'postgres' in storage ? storage.postgres.where : storage.dataDir,
  })
  const rpcHealth = node.client.chain.rpcHealth()
  if (rpcHealth && rpcHealth.endpoints.length > 1)
    log.info('RPC endpoints, used in this order: {endpoints}', {
      endpoints: rpcHealth.endpoints.map((e) =>
        e.state === 'up' ? e.endpoint : `${e.endpoint} (${e.state}${e.lastFailure ? `: ${e.lastFailure.reason}` : ''})`,
      ),
    })
  if (libp2p) log.info('Transport: {transport}, peer id {peerId}, relay {relays}', { transport, peerId: libp2p.peerId, relays })
  if (libp2p && direct && direct.announce.length > 0)
    log.info('Direct connections: listening on {listen}, announced as {announce}', { listen: direct.listen, announce: direct.announce })
  else if (libp2p && direct && direct.listen.length > 0) log.info('Direct connections: listening on {listen}', { listen: direct.listen })
  else log.info('Transport: {transport} (reaches nodes in this process only)', { transport })
  if (settings.enableMonitoring)
    log.info('Monitoring: on, {monitoringReward} service token units offered per request (GET /api/v1/monitoring shows the services)', {
      monitoringReward: settings.monitoringReward,
    })
  if (apiUrl) log.info('REST API: {url}', { url: apiUrl })

  let stopping: Promise<void> | undefined
  return {
    ...hosted,
    apiUrl,
    peerId: libp2p?.peerId,
    lease,
    stop: () =>
      (stopping ??= hosted.stop().finally(() => {
        stopProgress()
        offNotices()
      })),
  }
}

/** Settings left out rather than set to undefined, so createNode's defaults apply (exactOptionalPropertyTypes-safe). */
function definedOnly<T extends object>(settings: T): T {
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined)) as T
}
