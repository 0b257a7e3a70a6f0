import type { Address, Hex, Transport as ViemTransport } from 'viem'
import { createChainClient, type ChainClient } from '../chain/chainClient.ts'
import type { RpcEndpointsParameters } from '../chain/rpcEndpoints.ts'
import { createTransactionQueue, type TransactionQueue } from '../chain/transactionQueue.ts'
import { describeRisk } from '../chain/transactionRisk.ts'
import { SluiceError } from '../errors.ts'
import { signMessage } from '../protocol/messages/sign.ts'
import type { Delivered } from '../protocol/messages/types.ts'
import { encodeMessage } from '../protocol/messages/wire.ts'
import { storeJournal, type JournalStore } from '../storage/storeJournal.ts'
import type { Transport } from '../transport/transport.ts'
import { ensureRegistered, type EnsureRegisteredReturnType } from './registration.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'

// What the two service processes (the monitoring service, docs/decisions/0031, and the pathfinding service, 0072)
// do alike with their key: their chain client, their transaction queue, their registration, their acknowledgements.

/** A service's log: what it does (`info`), what goes wrong (`warn`: it tries again; `error`: a bug), one line each. */
export type ServiceLog = (line: string, level: 'info' | 'warn' | 'error') => void

/** An error in one line for the service's log. */
export const errorLine = (error: unknown) =>
  error instanceof SluiceError ? error.shortMessage : error instanceof Error ? error.message.split('\n')[0] : String(error)

/**
 * The service's chain client over the operator's endpoints, used in order as a node uses them
 * (src/chain/rpcEndpoints.ts), requests batched over http; each endpoint that goes down or answers again is logged.
 */
export function createServiceChain(p: {
  rpc?: string | readonly string[] | undefined
  /** Instead of `rpc`: a viem transport (tests, a provider). */
  chainTransport?: ViemTransport | undefined
  key: Hex
  chainId: number
  /** Milliseconds between looks at the chain (the client polls at most every 4 s). */
  pollingInterval: number
  log: ServiceLog
  /** Told each failure of an endpoint (the process's metrics count them). */
  onRpcFailure?: RpcEndpointsParameters['onFailure'] | undefined
}): Promise<ChainClient> {
  return createChainClient({
    privateKey: p.key,
    chainId: p.chainId,
    pollingInterval: Math.min(p.pollingInterval, 4_000),
    ...(p.chainTransport ? { transport: p.chainTransport } : {}),
    ...(p.rpc ? { rpcUrl: p.rpc } : {}),
    endpoints: {
      batch: true,
      ...(p.onRpcFailure ? { onFailure: p.onRpcFailure } : {}),
      onChange: ({ endpoint, state, reason }) =>
        p.log(
          `RPC endpoint ${endpoint} ${state === 'up' ? 'answers again' : `${state === 'down' ? 'down' : 'refused'}: ${reason ?? ''}`}`,
          state === 'up' ? 'info' : 'warn',
        ),
    },
  })
}

/**
 * The service's transaction queue, journaled in its store before a broadcast (docs/decisions/0051): a restart follows
 * what it sent instead of sending again. A transaction is done at its receipt (a reorg within 32 blocks sends it again
 * all the same); one at risk of missing its deadline is logged as an error.
 */
export function createServiceQueue(chain: ChainClient, store: JournalStore, p: { maxFeePerGas?: bigint | undefined; log: ServiceLog }): TransactionQueue {
  return createTransactionQueue(chain, {
    journal: storeJournal(store),
    confirmations: 0n,
    ...(p.maxFeePerGas !== undefined ? { maxFeePerGas: p.maxFeePerGas } : {}),
    onRisk: (nonce, risk) => {
      if (risk) p.log(`transaction at risk: ${describeRisk(risk)}`, 'error')
      else p.log(`transaction ${nonce} no longer at risk`, 'info')
    },
    onError: (error) => p.log(`transactions: ${errorLine(error)}`, 'warn'),
  })
}

/** How often the registration is looked at while the service runs. */
const REGISTRATION_CHECK_MS = 3_600_000

/**
 * The service's registration in the ServiceRegistry: made (or extended, or its URL published) at start, then looked
 * at hourly while the service runs, so that one that ends within a week is extended (ensureRegistered).
 */
export class ServiceRegistration {
  private current: EnsureRegisteredReturnType | undefined
  private checkedAt = 0
  private renewing: Promise<void> | undefined
  /** The URL it publishes (`start`'s). */
  url: string | undefined

  constructor(
    private readonly chain: ChainClient,
    private readonly queue: TransactionQueue,
    private readonly serviceRegistry: Address,
    private readonly log: ServiceLog,
  ) {}

  /** As last made sure of; undefined before the start registered it. */
  get registration(): EnsureRegisteredReturnType | undefined {
    return this.current
  }

  /** Registers now; RegistrationFailedError says why it cannot. */
  async register(): Promise<void> {
    this.current = await ensureRegistered(this.chain, this.queue, { serviceRegistry: this.serviceRegistry, url: this.url })
    this.checkedAt = Date.now()
  }

  /** After each look at the chain: once an hour, the registration is looked at again (a failure is logged, tried an hour later). */
  renewIfDue(): void {
    if (this.renewing || Date.now() - this.checkedAt <= REGISTRATION_CHECK_MS) return
    this.renewing = this.register()
      .catch((error: unknown) => {
        this.checkedAt = Date.now()
        this.log(`registration: ${errorLine(error)}`, 'warn')
      })
      .finally(() => {
        this.renewing = undefined
      })
  }

  /** Waits for a renewal under way. */
  async stop(): Promise<void> {
    await this.renewing
  }
}

/**
 * Acknowledges a message to its sender with a signed Delivered, best effort as every transport send: the sender
 * resends until acknowledged. Nothing without a transport.
 */
export function acknowledger(curve: Secp256k1Engine, key: Hex, transport: Transport | undefined): (to: Address, delivered: Delivered) => void {
  return (to, delivered) => {
    if (!transport) return
    void signMessage(curve, key, delivered)
      .then((signed) => transport.send(to, [encodeMessage(signed)]))
      .catch(() => {})
  }
}
