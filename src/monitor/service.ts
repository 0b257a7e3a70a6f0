import { getAddress, type Address, type Hex, type Transport as ViemTransport } from 'viem'
import { createChainClient, type ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { createTransactionQueue, type TransactionQueue } from '../chain/transactionQueue.ts'
import { describeRisk } from '../chain/transactionRisk.ts'
import { storeJournal } from '../storage/storeJournal.ts'
import { SluiceError } from '../errors.ts'
import { signMessage } from '../protocol/messages/sign.ts'
import type { Delivered } from '../protocol/messages/types.ts'
import { encodeMessage } from '../protocol/messages/wire.ts'
import type { Transport } from '../transport/transport.ts'
import { createChainFacts } from './chainFacts.ts'
import { monitorChainWatch } from './chainWatch.ts'
import { DutyRunner } from './duties.ts'
import { Intake, type IntakeCounts } from './intake.ts'
import { defaultLimits, type Limits } from './limits.ts'
import type { WatchedChannel } from './records.ts'
import { ensureRegistered, type EnsureRegisteredReturnType } from './registration.ts'
import { MonitorStore } from './store.ts'

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
  /** Where its LevelDB store lives. */
  dataDir: string
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
  log?: (line: string, level: 'info' | 'warn' | 'error') => void
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
}

/** How often the registration is looked at while the service runs. */
const REGISTRATION_CHECK_MS = 3_600_000

/** The service stopped on its own: its store failed (nothing more can be acknowledged). */
export class MonitoringServiceFailedError extends SluiceError {
  override name = 'MonitoringServiceFailedError' as const
  override readonly code = 'MONITOR_FAILED' as const
}

export type MonitoringService = {
  readonly address: Address
  readonly chain: ChainClient
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
  const chain = await createChainClient({
    privateKey: config.key,
    chainId: deployment.chainId,
    pollingInterval: Math.min(config.pollingInterval ?? 1_000, 4_000),
    ...(config.chainTransport ? { transport: config.chainTransport } : {}),
    ...(config.rpc ? { rpcUrl: config.rpc } : {}),
    endpoints: {
      batch: true,
      onChange: ({ endpoint, state, reason }) =>
        log(
          `RPC endpoint ${endpoint} ${state === 'up' ? 'answers again' : `${state === 'down' ? 'down' : 'refused'}: ${reason ?? ''}`}`,
          state === 'up' ? 'info' : 'warn',
        ),
    },
  })
  const address = chain.address
  const monitoringService = getAddress(deployment.contracts.MonitoringService.address)
  const store = await MonitorStore.open(config.dataDir, { chainId: deployment.chainId, monitoringService, address })
  // Journaled in its store before a broadcast (docs/decisions/0051): a restart follows what it sent instead of sending again.
  const queue: TransactionQueue = createTransactionQueue(chain, {
    journal: storeJournal(store),
    // A duty is done at its receipt (as before the journal); a reorg within 32 blocks sends it again all the same.
    confirmations: 0n,
    ...(config.maxFeePerGas !== undefined ? { maxFeePerGas: config.maxFeePerGas } : {}),
    onRisk: (nonce, risk) => {
      if (risk) log(`transaction at risk: ${describeRisk(risk)}`, 'error')
      else log(`transaction ${nonce} no longer at risk`, 'info')
    },
    onError: (error) => log(`transactions: ${describe(error)}`, 'warn'),
  })
  const transport = config.transport?.(address)
  let registration: EnsureRegisteredReturnType | undefined
  let failWith: (error: Error) => void = () => {}
  const failed = new Promise<Error>((resolve) => (failWith = resolve))

  const acknowledge = (to: Address, delivered: Delivered) => {
    if (!transport) return
    void signMessage(config.key, delivered)
      .then((signed) => transport.send(to, [encodeMessage(signed)]))
      .catch(() => {
        // Best effort, as every transport send: the requester resends until acknowledged.
      })
  }
  const intake = new Intake({
    store,
    context: { chainId: BigInt(deployment.chainId), monitoringService, minReward: config.minReward ?? 0n },
    limits,
    facts: createChainFacts(chain, { registry: deployment.contracts.TokenNetworkRegistry.address, userDeposit: deployment.contracts.UserDeposit.address }),
    acknowledge,
    log: (event) => {
      if ('error' in event) log(`request from ${event.from}: internal error: ${describe(event.error)}`, 'error')
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
    onError: (where, error) => log(`${where}: ${describe(error)}`, 'warn'),
    onSent: (description, hash) => log(`sent ${description}: ${hash}`, 'info'),
  })
  const watch = monitorChainWatch({
    chain,
    deployment,
    store,
    confirmations: BigInt(config.confirmations ?? 5),
    pollingInterval: config.pollingInterval ?? 1_000,
    onLooked: () => {
      if (store.failed) failWith(new MonitoringServiceFailedError(`the store failed: ${store.failed.message}`, { cause: store.failed }))
      else duties.runDue()
      if (!renewing && Date.now() - registrationCheckedAt > REGISTRATION_CHECK_MS) renewing = renewRegistration()
    },
    onError: (where, error) => log(`${where}: ${describe(error)}`, 'warn'),
  })

  let started = false
  let stopped = false
  let url: string | undefined
  let registrationCheckedAt = 0
  let renewing: Promise<void> | undefined
  const register = async () => {
    registration = await ensureRegistered(chain, queue, { serviceRegistry: deployment.contracts.ServiceRegistry.address, url })
    registrationCheckedAt = Date.now()
  }
  /** Looked at hourly: a registration that ends within a week is extended while the service runs. */
  const renewRegistration = () =>
    register()
      .catch((error: unknown) => {
        registrationCheckedAt = Date.now()
        log(`registration: ${describe(error)}`, 'warn')
      })
      .finally(() => {
        renewing = undefined
      })
  return {
    address,
    chain,
    store,
    failed,
    async start(options = {}) {
      if (started) return
      started = true
      url = options.url
      // What it sent before a restart is followed again (and sent again where the chain lacks it) before anything new.
      await queue.start()
      if (stopped) return
      await register()
      // A stop during the start ends it at the next step.
      if (stopped) return
      await watch.catchUp()
      if (stopped) return
      duties.runDue()
      if (transport) await transport.start((lines, from) => intake.receive(lines, from))
      if (stopped) return void (await transport?.stop().catch(() => {}))
      watch.start()
    },
    async stop() {
      if (stopped) return
      stopped = true
      await intake.stop()
      await transport?.stop().catch(() => {})
      await watch.stop()
      await renewing
      await duties.stop()
      await queue.stop()
      await store.close()
      await chain.close()
    },
    status() {
      const progress = watch.progress()
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
        registration,
        syncedBlock: store.sync?.syncedBlock ?? progress.syncedBlock,
        latestBlock: progress.latestBlock,
        requests: intake.counters(),
        watching: { channels, requests },
      }
    },
    channels: () => [...store.channels.values()],
  }
}

const describe = (error: unknown) => (error instanceof SluiceError ? error.shortMessage : error instanceof Error ? error.message.split('\n')[0] : String(error))
