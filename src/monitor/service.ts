import { getAddress, type Address, type Hex, type Transport as ViemTransport } from 'viem'
import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { SluiceError } from '../errors.ts'
import type { Transport } from '../transport/transport.ts'
import { createChainFacts } from './chainFacts.ts'
import { monitorChainWatch } from './chainWatch.ts'
import { DutyRunner } from './duties.ts'
import { Intake, type IntakeCounts } from './intake.ts'
import { defaultLimits, type Limits } from './limits.ts'
import type { WatchedChannel } from './records.ts'
import type { EnsureRegisteredReturnType } from './registration.ts'
import { acknowledger, createServiceChain, createServiceQueue, errorLine, ServiceRegistration, type ServiceLog } from './serviceAccount.ts'
import { Leadership, openServiceStorage, type ServiceDatabaseConfig } from './serviceDatabase.ts'
import { MonitorStore } from './store.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import type { RpcEndpointsParameters } from '../chain/rpcEndpoints.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'

export type MonitoringServiceConfig = {
  /**
   * The chain's JSON-RPC endpoints, used in order as a node uses them (src/chain/rpcEndpoints.ts); requests are
   * batched over http (a request's three reads go in one HTTP request).
   */
  rpc?: string | readonly string[]
  /** Instead of `rpc`: a viem transport (tests, a provider). */
  chainTransport?: ViemTransport
  deployment: Deployment
  /** The service's key: it pays for its transactions, signs its acknowledgements and is its libp2p identity. */
  key: Hex
  /** The curve engine its host chose (native in `sluice monitor`): every request's signers are recovered with it. */
  secp256k1: Secp256k1Engine
  /** Where its LevelDB store lives (unless `database`). */
  dataDir?: string
  /**
   * Its store on PostgreSQL instead, shared by several instances (docs/decisions/0077): all answer the API, the one
   * holding the lease follows the chain, takes requests and carries out the duties.
   */
  database?: ServiceDatabaseConfig
  /** How requests arrive (libp2p through relays, or a BroadcastChannel in one process); none: no new requests. */
  transport?: ((address: Address) => Transport) | undefined
  /** Confirmations before a chain event counts (default 5); its transactions are followed as deep before they are done. */
  confirmations?: number
  /** The most it offers per gas for its transactions, in wei (`--max-fee-per-gas` takes gwei); no cap by default. */
  maxFeePerGas?: bigint
  /** Milliseconds between looks at the chain (default 1000). */
  pollingInterval?: number
  /** The smallest reward accepted (default 0). */
  minReward?: bigint
  limits?: Partial<Limits>
  /** Told what the service does (`info`) and what goes wrong (`warn`: it tries again; `error`: a bug), one line each. */
  /** Told each failure of the chain's endpoints (--metrics counts them). */
  onRpcFailure?: RpcEndpointsParameters['onFailure']
  log?: ServiceLog
}

export type MonitoringServiceStatus = {
  address: Address
  chainId: number
  monitoringService: Address
  registration: EnsureRegisteredReturnType | undefined
  syncedBlock: bigint
  latestBlock: bigint
  requests: IntakeCounts
  /** Channels with a request held (open, or closed and not settled yet), and the requests held. */
  watching: { channels: number; requests: number }
  /** On PostgreSQL: whether this instance leads (holds the lease), and its id. */
  instance?: { leading: boolean; instance: string } | undefined
}

/** The service stopped on its own: its store failed (nothing more can be acknowledged). */
export class MonitoringServiceFailedError extends SluiceError {
  override name = 'MonitoringServiceFailedError' as const
  override readonly code = 'MONITOR_FAILED' as const
}

export type MonitoringService = {
  readonly address: Address
  readonly chain: ChainClient
  /** Its transactions under way (the metrics read them). */
  readonly queue: Pick<TransactionQueue, 'pending' | 'replaced'>
  readonly store: MonitorStore
  /**
   * Registers (publishing `url` in the ServiceRegistry when given), catches up with the chain, resumes the duties,
   * then takes requests and follows the chain.
   */
  start(options?: { url?: string | undefined }): Promise<void>
  stop(): Promise<void>
  status(): MonitoringServiceStatus
  /** Every watched channel, as stored. */
  channels(): WatchedChannel[]
  /** Resolves if the service fails on its own (its store). */
  readonly failed: Promise<Error>
}

/**
 * Builds a monitoring service (docs/decisions/0031): its store (opened now: a second process on the same data is
 * refused here), its chain client and transaction queue, the intake of requests, the chain watch and the duties.
 * Nothing runs before `start`.
 */
export async function createMonitoringService(config: MonitoringServiceConfig): Promise<MonitoringService> {
  const log = config.log ?? (() => {})
  const limits: Limits = { ...defaultLimits, ...config.limits }
  const { deployment } = config
  const chain = await createServiceChain({ ...config, chainId: deployment.chainId, pollingInterval: config.pollingInterval ?? 1_000, log })
  const address = chain.address
  const monitoringService = getAddress(deployment.contracts.MonitoringService.address)
  const identity = { chainId: deployment.chainId, monitoringService, address }
  // The chain client opened above is closed again when the store cannot be opened.
  const { store, database } = await openServiceStorage(config, {
    name: 'sluice monitor',
    leaseName: `monitor:${deployment.chainId}:${monitoringService.toLowerCase()}:${address.toLowerCase()}`,
    log,
    store: { open: (dataDir) => MonitorStore.open(dataDir, identity), openPostgres: (pool, options) => MonitorStore.openPostgres(pool, identity, options) },
  }).catch(async (e: unknown) => {
    await chain.close()
    throw e
  })
  const queue = createServiceQueue(chain, store, { maxFeePerGas: config.maxFeePerGas, log })
  const transport = config.transport?.(address)
  const registration = new ServiceRegistration(chain, queue, deployment.contracts.ServiceRegistry.address, log)
  let failWith: (error: Error) => void = () => {}
  const failed = new Promise<Error>((resolve) => (failWith = resolve))

  const intake = new Intake({
    store,
    context: { chainId: BigInt(deployment.chainId), monitoringService, minReward: config.minReward ?? 0n, curve: config.secp256k1 },
    limits,
    facts: createChainFacts(chain, { registry: deployment.contracts.TokenNetworkRegistry.address, userDeposit: deployment.contracts.UserDeposit.address }),
    acknowledge: acknowledger(config.secp256k1, config.key, transport),
    log: (event) => {
      if ('error' in event) log(`request from ${event.from}: internal error: ${errorLine(event.error)}`, 'error')
      else if (event.outcome.outcome === 'refused' && event.outcome.reason === 'store_failed') {
        log(`request from ${event.from} not stored: ${event.outcome.detail ?? ''}`, 'error')
        if (store.failed) failWith(new MonitoringServiceFailedError(`the store failed: ${store.failed.message}`, { cause: store.failed }))
      }
    },
  })
  const duties = new DutyRunner({
    chain,
    queue,
    store,
    monitoringService,
    userDeposit: deployment.contracts.UserDeposit.address,
    onError: (where, error) => log(`${where}: ${errorLine(error)}`, 'warn'),
    onSent: (description, hash) => log(`sent ${description}: ${hash}`, 'info'),
  })
  // Made when this instance leads: it starts from the sync mark as the store holds it then.
  let watch: ReturnType<typeof monitorChainWatch> | undefined
  const makeWatch = () =>
    monitorChainWatch({
      chain,
      deployment,
      store,
      confirmations: BigInt(config.confirmations ?? 5),
      pollingInterval: config.pollingInterval ?? 1_000,
      onLooked: () => {
        if (store.failed) failWith(new MonitoringServiceFailedError(`the store failed: ${store.failed.message}`, { cause: store.failed }))
        else duties.runDue()
        registration.renewIfDue()
      },
      onError: (where, error) => log(`${where}: ${errorLine(error)}`, 'warn'),
    })

  let started = false
  let stopped = false
  // On PostgreSQL only the lease holder leads; the others answer the API from the store as it follows the database.
  const leadership = new Leadership({
    lease: database?.lease,
    kind: 'monitoring service',
    failed: (error) => failWith(error),
    log,
    lead: async () => {
      // Everything the last leader wrote (its journal above all) is in memory before anything is looked at or sent.
      await store.catchUp()
      // What it sent before a restart is followed again (and sent again where the chain lacks it) before anything new.
      await queue.start()
      if (stopped) return
      await registration.register()
      // A stop during the start ends it at the next step.
      if (stopped) return
      watch = makeWatch()
      await watch.catchUp()
      if (stopped) return
      duties.runDue()
      // Only the leader is reachable over the transport: two libp2p peers of one identity on a relay would fight.
      if (transport) await transport.start((lines, from) => intake.receive(lines, from))
      if (stopped) return void (await transport?.stop().catch(() => {}))
      watch.start()
    },
  })
  return {
    address,
    chain,
    queue,
    store,
    failed,
    async start(options = {}) {
      if (started) return
      started = true
      registration.url = options.url
      await leadership.start()
    },
    async stop() {
      if (stopped) return
      stopped = true
      leadership.stop()
      await intake.stop()
      await transport?.stop().catch(() => {})
      await watch?.stop()
      await registration.stop()
      await duties.stop()
      await queue.stop()
      await store.close()
      // The lease is given up last, once nothing of this instance writes any more: a standby takes over at once.
      await database?.close()
      await chain.close()
    },
    status() {
      const progress = watch?.progress() ?? { syncedBlock: store.sync?.syncedBlock ?? 0n, latestBlock: store.sync?.syncedBlock ?? 0n }
      let requests = 0
      let channels = 0
      for (const channel of store.channels.values()) {
        const held = Object.keys(channel.requests).length
        requests += held
        if (held > 0) channels++
      }
      return {
        address,
        chainId: deployment.chainId,
        monitoringService,
        registration: registration.registration,
        syncedBlock: store.sync?.syncedBlock ?? progress.syncedBlock,
        latestBlock: progress.latestBlock,
        requests: intake.counters(),
        watching: { channels, requests },
        instance: leadership.role(),
      }
    },
    channels: () => [...store.channels.values()],
  }
}
