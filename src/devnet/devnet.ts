import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { createChainClient } from '../chain/chainClient.ts'
import { createTransactionQueue } from '../chain/transactionQueue.ts'
import { serveBackups, type ServedBackups } from '../cli/backupServer.ts'
import { describeError, type ServedNode } from '../cli/servedNode.ts'
import { hasCode, SluiceError } from '../errors.ts'
import type { Logger } from '../log/logger.ts'
import { anvilKeys, startAnvil, type Anvil } from './anvil.ts'
import { deployContracts } from './deploy.ts'
import { deploymentPath, writeDeployment } from './deploymentFile.ts'
import { createDevnetClient } from './devnetClient.ts'
import type { DevnetMonitor } from './devnetMonitor.ts'
import type { DevnetPathfinding } from './devnetPathfinding.ts'
import { openChannelLine, startNodes, CHANNEL_DEPOSIT } from './devnetNodes.ts'
import { startTransport, waitForPresence, type DevnetTransport } from './devnetTransport.ts'
import { registerTokensAndFund } from './funding.ts'

/**
 * `sluice devnet`: a whole network for development in one process, set up in the steps docs/cli.md describes (a
 * backup server; anvil with the contracts deployed; the test tokens registered and the accounts funded; the relay
 * with libp2p; with --pathfinding a pathfinding service; the nodes, synced; with --channels a line of channels; with
 * --monitoring a monitoring service), and
 * stopped in the reverse order. The command line (src/cli/devnet.ts) keeps the flags, the printing and the signals.
 */

export type DevnetOptions = {
  /** How many nodes: anvil's dev keys 1..N. */
  nodes: number
  /** Open a line of TTT channels 0-1, 1-2, ..., funded on both sides. */
  channels: boolean
  /** Node i's REST API on port PORT+i (the monitoring service's after them); 0 gives each a free port. */
  portBase: number
  /** anvil's JSON-RPC port; 0 picks a free one. */
  rpcPort: number
  backupPort: number
  /** Seconds between blocks; one block per transaction when absent. */
  blockTime?: number | undefined
  storage: 'level' | 'memory'
  /** Where the deployment file and the stores go; a temporary directory, removed at the end, when absent. */
  dataDir?: string | undefined
  monitoring: boolean
  /** Also a pathfinding service (free), started before the nodes, which announce their channels to it. */
  pathfinding: boolean
  transport: 'broadcast' | 'libp2p'
}

export type DevnetSummary = {
  rpcUrl: string
  deployment: string
  tokens: Record<string, Address>
  nodes: { address: Address; api: string }[]
  /** With --transport libp2p only: the multiaddr of the relay the nodes use (other nodes can use it too). */
  relay?: string
  /** The backup server (`sluice backup-server`): its API's base URL, http://127.0.0.1:PORT/backup/v1. */
  backup: { api: string }
  /** With --monitoring only: the monitoring service's address and REST API. */
  monitor?: { address: Address; api: string }
  /** With --pathfinding only: the pathfinding service's address and its URL (its REST API under /api/v1). */
  pathfinding?: { address: Address; url: string }
}

/** A port the devnet was asked to use is taken: the backup server's or anvil's (the nodes' say so themselves). */
export class DevnetPortInUseError extends SluiceError {
  override name = 'DevnetPortInUseError' as const
  override readonly code = 'DEVNET_PORT_IN_USE' as const
  constructor(
    readonly part: 'backup server' | 'anvil',
    readonly port: number,
  ) {
    super(`the ${part}'s port ${port} is already in use`)
  }
}

export type Devnet = {
  /** Sets everything up; resolves once every node is ready. A failure half-way leaves what started for `stop`. */
  start(): Promise<DevnetSummary>
  /**
   * Once started: resolves with what went wrong, when something does (a node's internal error, anvil's end, the
   * monitoring service failing). A node's POST /shutdown stops that node only.
   */
  problem(): Promise<string>
  /** Stops whatever started, in the reverse order, and removes a temporary data directory. */
  stop(): Promise<void>
}

export function createDevnet(options: DevnetOptions, log: Logger): Devnet {
  const ownDir = options.dataDir === undefined
  let dataDir: string | undefined = options.dataDir === undefined ? undefined : resolve(options.dataDir)
  let backups: ServedBackups | undefined
  let anvil: Anvil | undefined
  let transport: DevnetTransport | undefined
  const served: ServedNode[] = []
  let monitor: DevnetMonitor | undefined
  let pathfinding: DevnetPathfinding | undefined

  async function start(): Promise<DevnetSummary> {
    dataDir ??= await mkdtemp(join(tmpdir(), 'sluice-devnet-'))
    backups = await startBackupServer(dataDir, options.backupPort, log)
    log.info('backup server at {url}; starting anvil', { url: backups.url })

    anvil = await startChain(options)
    const rpcUrl = anvil.rpcUrl
    log.info('anvil at {rpcUrl}; deploying the contracts', { rpcUrl })
    const deployment = await deployContracts(createDevnetClient({ rpcUrl, privateKey: anvilKeys[0] }), { rpcUrl })
    const path = deploymentPath(join(dataDir, 'deployments'), deployment.chainId)
    await writeDeployment(path, deployment)
    log.info('contracts deployed on chain {chainId}; deployment file {deployment}', { chainId: deployment.chainId, deployment: path })

    log.info('registering the tokens {tokens}; funding {accounts} accounts', { tokens: Object.keys(deployment.tokens), accounts: options.nodes })
    const deployer = await createChainClient({ rpcUrl, privateKey: anvilKeys[0], pollingInterval: 50 })
    const queue = createTransactionQueue(deployer)
    const keys = anvilKeys.slice(1, 1 + options.nodes) as Hex[]
    const tokenNetworks = await registerTokensAndFund(deployer, queue, deployment, keys.map(privateKeyToAddress))
    log.info('tokens registered; {accounts} accounts funded', { accounts: keys.length, tokenNetworks })

    transport = await startTransport(options.transport, log)
    const serviceSetup = { rpcUrl, deployment, deployer, queue, transport, dataDir, log }
    // Before the nodes: they tell it of their channels from their start (docs/decisions/0073).
    if (options.pathfinding) {
      log.info('starting the pathfinding service: funding it, registering it, its first sync')
      const { startPathfindingService } = await import('./devnetPathfinding.ts')
      await startPathfindingService({
        ...serviceSetup,
        port: options.portBase === 0 ? 0 : options.portBase + keys.length + 1,
        started: (p) => (pathfinding = p),
      })
      log.info('pathfinding service {address}, registered; REST API {url}', { address: pathfinding!.service.address, url: pathfinding!.api!.apiUrl })
    }
    log.info('starting {nodes} nodes ({storage} storage, {transport})', { nodes: keys.length, storage: options.storage, transport: options.transport })
    await startNodes({
      rpcUrl,
      deployment,
      keys,
      storage: options.storage,
      dataDir,
      transport,
      portBase: options.portBase,
      served,
      log,
      ...(pathfinding?.api ? { pathfindingServiceAddress: pathfinding.api.server.url } : {}),
    })
    if (transport.relay) await waitForPresence(transport.libp2p, log)

    if (options.channels) {
      const line = served.map((_, i) => i).join('-')
      log.info('opening the channels {line} (TTT)', { line })
      await openChannelLine(served, deployment.tokens.TTT!, () => deployer.publicClient.getBlockNumber())
      log.info('channels open: {line} (TTT, {deposit} on each side)', { line, deposit: CHANNEL_DEPOSIT })
    }
    if (options.monitoring) {
      log.info('starting the monitoring service: funding it, registering it, its first sync')
      const { startMonitoringService } = await import('./devnetMonitor.ts')
      await startMonitoringService({
        ...serviceSetup,
        port: options.portBase === 0 ? 0 : options.portBase + keys.length,
        started: (m) => (monitor = m),
      })
      log.info('monitoring service {address}, registered; REST API {url}', { address: monitor!.service.address, url: monitor!.api!.apiUrl })
    }
    return {
      rpcUrl,
      deployment: path,
      tokens: deployment.tokens,
      nodes: served.map((s) => ({ address: s.node.address, api: s.apiUrl })),
      ...(transport.relay ? { relay: transport.relay.multiaddrs[0]! } : {}),
      backup: { api: backups.url },
      ...(monitor?.api ? { monitor: { address: monitor.service.address, api: monitor.api.apiUrl } } : {}),
      ...(pathfinding?.api ? { pathfinding: { address: pathfinding.service.address, url: pathfinding.api.server.url } } : {}),
    }
  }

  function problem(): Promise<string> {
    return new Promise<string>((resolveProblem) => {
      for (const s of served) {
        void s.stopRequested.then(async (request) => {
          if (request.reason === 'shutdown') {
            log.info('node {address}: POST /shutdown, stopping it', { address: s.node.address })
            await s.stop()
            return
          }
          resolveProblem(`node ${s.node.address}: ${request.reason}: ${describeError(request.error)}`)
        })
      }
      anvil?.process.once('exit', (code, sig) => resolveProblem(`anvil exited (${sig ?? `exit code ${code}`})`))
      void monitor?.service.failed.then((error) => resolveProblem(`the monitoring service failed: ${describeError(error)}`))
      void monitor?.api?.internalError.then((error) => resolveProblem(`the monitoring service's API: internal error: ${describeError(error)}`))
      void pathfinding?.service.failed.then((error) => resolveProblem(`the pathfinding service failed: ${describeError(error)}`))
      void pathfinding?.api?.internalError.then((error) => resolveProblem(`the pathfinding service's API: internal error: ${describeError(error)}`))
    })
  }

  async function stop(): Promise<void> {
    await monitor?.api?.server.close(1_000)
    await monitor?.service.stop().catch(() => {})
    await Promise.all(served.map((s) => s.stop(1_000).catch(() => {})))
    await pathfinding?.api?.server.close(1_000)
    await pathfinding?.service.stop().catch(() => {})
    await backups?.close(1_000).catch(() => {})
    await transport?.relay?.stop().catch(() => {})
    await anvil?.stop()
    if (ownDir && dataDir) await rm(dataDir, { recursive: true, force: true })
  }

  return { start, problem, stop }
}

/** The backup server (as `sluice backup-server`) on 127.0.0.1, its copies in `<dataDir>/backup`. */
async function startBackupServer(dataDir: string, port: number, log: Logger): Promise<ServedBackups> {
  try {
    return await serveBackups({
      dataDir: join(dataDir, 'backup'),
      host: '127.0.0.1',
      port,
      onInternalError: (error) => log.error('backup server: internal error (answered 500)', { error }),
    })
  } catch (e) {
    if (hasCode(e, 'API_PORT_IN_USE')) throw new DevnetPortInUseError('backup server', port)
    throw e
  }
}

/** anvil, mining a block per transaction, or every `blockTime` seconds. */
async function startChain({ rpcPort, blockTime }: DevnetOptions): Promise<Anvil> {
  try {
    return await startAnvil({ port: rpcPort, ...(blockTime ? { blockTime } : {}) })
  } catch (e) {
    if (hasCode(e, 'ANVIL_PORT_IN_USE')) throw new DevnetPortInUseError('anvil', rpcPort)
    throw e
  }
}
