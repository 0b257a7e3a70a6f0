import type { Address } from 'viem'
import type { ChainClient } from '../chain/chainClient.ts'
import { ChainRpcError } from '../chain/errors.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import { channelWith, type TransitionContext } from '../protocol/state/access.ts'
import type { StateChange } from '../protocol/state/changes.ts'
import type { Channel, NodeState } from '../protocol/state/types.ts'
import type { Storage } from '../storage/storage.ts'
import type { Delivery } from '../transport/delivery.ts'
import type { ChainFollower } from './runtime/chainFollower.ts'
import { TokenNetworkConnections } from './services/connections.ts'
import type { Applied, Engine } from './runtime/engine.ts'
import { NodeStoppedError } from './errors.ts'
import type { EventBus } from './runtime/eventBus.ts'
import type { ResolvedNodeConfig } from './nodeConfig.ts'
import type { ErrorSource, NodeNotice, NodeStatus } from './notices.ts'
import { NodeNotifications } from './services/notifications.ts'
import { PaymentsInFlight } from './actions/paymentsInFlight.ts'
import type { TransactionRunner } from './runtime/transactionRunner.ts'

/** The parts createNode wires into a node (createNode.ts builds them from a NodeConfig). */
export type SluiceNodeParts = {
  config: ResolvedNodeConfig
  ctx: TransitionContext
  chain: ChainClient
  queue: TransactionQueue
  storage: Storage
  engine: Engine
  delivery: Delivery
  follower: ChainFollower
  transactions: TransactionRunner
  /** The records a restart left unfinished: their transactions are looked at again once the node runs. */
  pendingTransactions: Parameters<TransactionRunner['run']>[0][]
  notices: EventBus<NodeNotice>
  /** Aborted by stop(): whatever waits for an outcome gives up then. */
  stopping: AbortController
}

/**
 * One node: lifecycle and wiring only. Build it with `createNode(config)`; `run()` resumes deliveries and
 * transactions and catches up with the chain; `stop()` stops it. The user's actions are plain functions taking
 * the node first (actions/channels.ts, actions/payments.ts, ...), as viem's actions take a client; the parts they use are
 * the readonly fields below. The same class runs headless in Node and inside a browser worker.
 */
export class SluiceNode {
  readonly config: ResolvedNodeConfig
  readonly ctx: TransitionContext
  /** This account's viem clients: every read of the chain and every signature of a transaction. */
  readonly chain: ChainClient
  /** This account's ordered transaction queue: every on-chain action of the node goes through it. */
  readonly queue: TransactionQueue
  /** The node's store (payment history, events, chain events); services read it, only the engine writes. */
  readonly storage: Storage
  readonly notices: EventBus<NodeNotice>
  /** Payments in flight, by target and identifier, and the slots that bound how many run at once. */
  readonly payments: PaymentsInFlight
  /** The connection manager (PUT/DELETE /connections). */
  readonly connections: TokenNetworkConnections
  /** The notifications of GET /notifications, checked once the node is ready. */
  readonly notifications: NodeNotifications
  private readonly engine: Engine
  private readonly delivery: Delivery
  private readonly follower: ChainFollower
  private readonly transactions: TransactionRunner
  private readonly pendingTransactions: SluiceNodeParts['pendingTransactions']
  private readonly stopping: AbortController
  private statusValue: NodeStatus
  private running: Promise<void> | undefined
  private haltWith: ((error: Error) => void) | undefined
  /** Resolves with the error when the node stops itself while it runs (STALE_STATE): its host should report it and stop. */
  readonly halted: Promise<Error> = new Promise((resolve) => (this.haltWith = resolve))
  /** What waits for a notice (a payment's outcome): rejected with NodeStoppedError on stop. */
  private readonly waiters = new Set<(error: Error) => void>()

  constructor(parts: SluiceNodeParts) {
    this.config = parts.config
    this.ctx = parts.ctx
    this.chain = parts.chain
    this.queue = parts.queue
    this.storage = parts.storage
    this.engine = parts.engine
    this.delivery = parts.delivery
    this.follower = parts.follower
    this.transactions = parts.transactions
    this.pendingTransactions = parts.pendingTransactions
    this.notices = parts.notices
    this.stopping = parts.stopping
    this.statusValue = { status: 'syncing', blocksToSync: 0n, syncedBlock: parts.follower.syncedBlock }
    this.payments = new PaymentsInFlight(Math.max(1, this.ctx.maxPendingLocks - 32))
    this.connections = new TokenNetworkConnections(this)
    this.notifications = new NodeNotifications(this, parts.config.notifications)
  }

  get address(): Address {
    return this.chain.address
  }

  /** The latest applied state (durable, or about to be): read-only. */
  get state(): NodeState {
    return this.engine.current
  }

  get status(): NodeStatus {
    return this.statusValue
  }

  /** Aborted once the node stops. */
  get stopped(): AbortSignal {
    return this.stopping.signal
  }

  /**
   * Resumes deliveries and unfinished transactions, catches up with the chain (the status says how far it is),
   * then follows it: resolves once the node is ready. Calling it again returns the same run.
   */
  run(): Promise<void> {
    this.running ??= this.start()
    return this.running
  }

  private async start(): Promise<void> {
    // The transport (reaching a relay, say) and the catch-up with the chain go on side by side: neither needs the
    // other, and both come before ready. The first sync can be long, and the status tells how far it is.
    const delivering = this.delivery.start()
    for (const record of this.pendingTransactions) void this.transactions.run(record)
    await Promise.all([delivering, this.follower.catchUp(() => this.stopping.signal.aborted)])
    if (this.stopping.signal.aborted) throw new NodeStoppedError()
    this.publishStatus('ready')
    this.follower.start()
  }

  /** Dispatches a change and waits until it is durable (its effects are under way). */
  dispatch(change: StateChange): Promise<Applied> {
    if (this.stopping.signal.aborted) return Promise.reject(new NodeStoppedError())
    return this.engine.dispatch(change)
  }

  /**
   * Resolves once the state has synced the given block (chain events up to it are applied). It asks the follower
   * for its sync step (the one under way, if any: never a second sync of the same blocks, docs/decisions/0028);
   * a failing endpoint is asked again until the deadline, anything else (a refused commit) fails at once.
   */
  async waitForBlock(blockNumber: bigint, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    let endpointError: ChainRpcError | undefined
    while (this.engine.current.blockNumber < blockNumber) {
      if (this.stopping.signal.aborted) throw new NodeStoppedError()
      if (Date.now() > deadline) throw new Error(`block ${blockNumber} not synced within ${timeoutMs} ms`, { cause: endpointError })
      const synced = await this.follower.syncOnce().catch((error: unknown) => {
        if (!(error instanceof ChainRpcError)) throw error
        endpointError = error
        return false
      })
      if (!synced) await new Promise((r) => setTimeout(r, 20))
      this.updateProgress()
    }
    await this.engine.settled()
  }

  /**
   * The first notice `predicate` accepts; NodeStoppedError if the node stops first. One entry per waiter, dropped
   * when it resolves (no listener left on a long-lived signal or promise per payment).
   */
  nextNotice(predicate: (notice: NodeNotice) => boolean): Promise<NodeNotice> {
    if (this.stopping.signal.aborted) return Promise.reject(new NodeStoppedError())
    return new Promise((resolve, reject) => {
      const off = this.notices.subscribe((notice) => {
        if (!predicate(notice)) return
        done()
        resolve(notice)
      })
      const fail = (error: Error) => {
        done()
        reject(error)
      }
      const done = () => {
        off()
        this.waiters.delete(fail)
      }
      this.waiters.add(fail)
    })
  }

  /** Our channel with `partner` in `tokenNetwork`: the open one, else the latest. */
  channel(tokenNetwork: Address, partner: Address): Channel | undefined {
    return channelWith(this.engine.current, tokenNetwork, partner)
  }

  /** Reports an error to the listeners (logs, the event stream); it decides nothing. */
  report(where: ErrorSource, error: unknown, detail?: string): void {
    if (!this.stopping.signal.aborted) this.notices.publish({ type: 'error', error, where, ...(detail ? { detail } : {}) })
  }

  /** Called by the wiring after each commit that synced blocks: the status follows the sync. */
  updateProgress(): void {
    const progress = this.follower.progress()
    this.statusValue = { ...this.statusValue, blocksToSync: progress.blocksToSync, syncedBlock: this.follower.syncedBlock }
  }

  private publishStatus(status: NodeStatus['status']) {
    const progress = this.follower.progress()
    this.statusValue = { status, blocksToSync: progress.blocksToSync, syncedBlock: this.engine.current.blockNumber }
    this.notices.publish({ type: 'status', status: this.statusValue })
  }

  /**
   * Stops the node on its own, for a reason its host must hear (`halted`): nothing more is signed or sent from now on
   * (the shell's effect handler has already held back the batch that found it), then it stops as `stop()` does.
   */
  halt(error: Error): Promise<void> {
    if (!this.stopping.signal.aborted) this.notices.publish({ type: 'error', error, where: 'node' })
    this.haltWith?.(error)
    this.haltWith = undefined
    return this.stop()
  }

  /** Stops syncing, delivering and accepting work; waits for what is being committed, then closes the store. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return
    this.stopping.abort(new NodeStoppedError())
    for (const fail of [...this.waiters]) fail(new NodeStoppedError())
    this.notifications.stop()
    this.connections.stop()
    await this.follower.stop()
    await this.delivery.stop()
    // A clean stop leaves a snapshot: the next start replays nothing.
    this.engine.close()
    await this.engine.snapshot()
    await this.storage.close()
    await this.running?.catch(() => {})
    this.statusValue = { ...this.statusValue, status: 'stopped' }
    // Subscribers that outlive the node (the API's event streams) learn here that nothing more will come.
    this.notices.publish({ type: 'status', status: this.statusValue })
  }
}
