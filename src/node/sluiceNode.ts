import type { Address } from 'viem'
import { sameMediationFees } from '../protocol/fees/schedule.ts'
import type { NodeState } from '../protocol/state/types.ts'
import type { Storage } from '../storage/storage.ts'
import type { Delivery } from '../transport/delivery.ts'
import type { NodeClient } from './actions/client.ts'
import { NodeStoppedError } from './errors.ts'
import type { NodeNotice, NodeStatus, Report } from './notices.ts'
import type { ChainFollower } from './runtime/chainFollower.ts'
import type { Engine } from './runtime/engine.ts'
import type { EventBus } from './runtime/eventBus.ts'
import type { StatusTracker } from './runtime/status.ts'
import type { TransactionRunner } from './runtime/transactionRunner.ts'
import type { NodeServices } from './services/nodeServices.ts'
import type { Service } from './services/service.ts'

/** The parts createNode wires into a node (createNode.ts builds them from a NodeConfig). */
export type SluiceNodeParts = {
  client: NodeClient
  services: NodeServices
  storage: Storage
  engine: Engine
  delivery: Delivery
  follower: ChainFollower
  transactions: TransactionRunner
  /** The records a restart left unfinished: their transactions are looked at again once the node runs. */
  pendingTransactions: Parameters<TransactionRunner['run']>[0][]
  notices: EventBus<NodeNotice>
  status: StatusTracker
  report: Report
  /** Aborted by stop(): whatever waits for an outcome gives up then. */
  stopping: AbortController
}

/**
 * One node: lifecycle and wiring only. Build it with `createNode(config)`; `run()` resumes deliveries and
 * transactions, catches up with the chain and starts the services; `stop()` stops it. The user's actions take its `client` first
 * (actions/channels.ts, actions/payments.ts, ...), as viem's actions take a client. The same class runs headless
 * in Node and inside a browser worker.
 */
export class SluiceNode {
  /** What the actions (and the API) see of the node. */
  readonly client: NodeClient
  /** The node's notices: hosts subscribe (logs, the API's event stream). */
  readonly notices: EventBus<NodeNotice>
  /** The background services (services/nodeServices.ts): started once the node is ready, stopped in the reverse order. */
  readonly services: NodeServices
  private readonly storage: Storage
  private readonly engine: Engine
  private readonly delivery: Delivery
  private readonly follower: ChainFollower
  private readonly transactions: TransactionRunner
  private readonly pendingTransactions: SluiceNodeParts['pendingTransactions']
  private readonly statusTracker: StatusTracker
  private readonly report: Report
  private readonly stopping: AbortController
  private running: Promise<void> | undefined
  private haltWith: ((error: Error) => void) | undefined
  /** Resolves with the error when the node stops itself while it runs (STALE_STATE): its host should report it and stop. */
  readonly halted: Promise<Error> = new Promise((resolve) => (this.haltWith = resolve))

  constructor(parts: SluiceNodeParts) {
    this.client = parts.client
    this.services = parts.services
    this.notices = parts.notices
    this.storage = parts.storage
    this.engine = parts.engine
    this.delivery = parts.delivery
    this.follower = parts.follower
    this.transactions = parts.transactions
    this.pendingTransactions = parts.pendingTransactions
    this.statusTracker = parts.status
    this.report = parts.report
    this.stopping = parts.stopping
  }

  get address(): Address {
    return this.client.address
  }

  /** The latest applied state (durable, or about to be): read-only. */
  get state(): NodeState {
    return this.client.state
  }

  get status(): NodeStatus {
    return this.statusTracker.current
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
    // What the node charges for mediating is this run's config; it enters the state by a change, before any message
    // is taken in, so that a replay of the log forwards the amounts that were forwarded (docs/decisions/0069).
    const { mediationFees } = this.client.config
    if (!sameMediationFees(this.engine.current.mediationFees, mediationFees)) await this.engine.dispatch({ type: 'setMediationFees', fees: mediationFees })
    // The transport (reaching a relay, say) and the catch-up with the chain go on side by side: neither needs the
    // other, and both come before ready. The first sync can be long, and the status tells how far it is.
    const delivering = this.delivery.start()
    // What the journal holds is followed again (sent again where the chain lacks it) before the intents join it.
    void this.client.queue.start().catch((error: unknown) => {
      if (!this.stopping.signal.aborted) this.report('transaction', error)
    })
    for (const record of this.pendingTransactions) void this.transactions.run(record)
    await Promise.all([delivering, this.follower.catchUp(() => this.stopping.signal.aborted)])
    if (this.stopping.signal.aborted) throw new NodeStoppedError()
    await this.syncRestoredChannels()
    this.statusTracker.ready()
    this.follower.start()
    const { servicesWhen } = this.client.config
    if (!servicesWhen) return this.startServices()
    // Later, in the background (the page's first answers first): a service that fails to start then halts the node,
    // as a failed run() would stop it.
    void servicesWhen()
      .then(() => this.startServices())
      .catch((error: unknown) => void this.halt(error instanceof Error ? error : new Error(String(error))))
  }

  private startServices(): void {
    if (this.stopping.signal.aborted) return
    for (const service of this.serviceList()) service?.start()
  }

  /**
   * A restored node's channels wait for their partner's sync: ask every partner at each start while one waits (the
   * requests are retried until delivered; an answer after a restart is as good). A forgotten life's too (createNode).
   */
  private async syncRestoredChannels(): Promise<void> {
    const channels = () => Object.values(this.engine.current.channels)
    if (channels().some((c) => c.waitingSync)) await this.engine.dispatch({ type: 'requestChannelSyncs' })
  }

  private serviceList(): (Service | undefined)[] {
    return Object.values(this.services)
  }

  /**
   * Stops the node on its own, for a reason its host must hear (`halted`): nothing more is signed or sent from now on
   * (the shell's effect handler has already held back the batch that found it), then it stops as `stop()` does.
   */
  halt(error: Error): Promise<void> {
    this.report('node', error)
    this.haltWith?.(error)
    this.haltWith = undefined
    return this.stop()
  }

  /** Stops syncing, delivering and accepting work; waits for what is being committed, then closes the store. */
  async stop(): Promise<void> {
    if (this.stopping.signal.aborted) return
    // The client's waiters (a payment's outcome) fail with NodeStoppedError as the signal aborts.
    this.stopping.abort(new NodeStoppedError())
    // In the reverse order; one that stops asynchronously is waited for before the next.
    for (const service of this.serviceList().reverse()) {
      const stopped = service?.stop()
      if (stopped) await stopped
    }
    await this.follower.stop()
    // Transactions under way stay in the journal: the next start follows them again.
    await this.client.queue.stop()
    await this.delivery.stop()
    // A clean stop leaves a snapshot: the next start replays nothing.
    this.engine.close()
    await this.engine.snapshot()
    await this.storage.close()
    // Its endpoints' sockets (a ws endpoint's would keep a process alive, and a page's worker holding it).
    await this.client.chain.close().catch(() => {})
    await this.running?.catch(() => {})
    this.statusTracker.stopped()
  }
}
