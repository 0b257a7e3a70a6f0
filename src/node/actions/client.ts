import type { Address, Hex } from 'viem'
import type { ChainClient } from '../../chain/chainClient.ts'
import type { TransactionQueue } from '../../chain/transactionQueue.ts'
import { channelWith, publicKeyOf } from '../../protocol/state/access.ts'
import type { StateChange } from '../../protocol/state/changes.ts'
import type { Channel, NodeState } from '../../protocol/state/types.ts'
import type { OutboxRecord, Storage } from '../../storage/storage.ts'
import type { Delivery, DeliveryStats } from '../../transport/delivery.ts'
import type { Transport } from '../../transport/transport.ts'
import { ConfirmationTimeoutError, NodeStoppedError } from '../errors.ts'
import type { ResolvedNodeConfig } from '../nodeConfig.ts'
import type { NodeNotice, NodeStatus, Report } from '../notices.ts'
import type { ChainFollower } from '../runtime/chainFollower.ts'
import type { Applied, Engine } from '../runtime/engine.ts'
import type { EventBus } from '../runtime/eventBus.ts'
import type { Gossip } from '../runtime/gossip.ts'
import type { Pathfinder } from '../runtime/pathfinder.ts'
import type { PeerRecords } from '../runtime/routeMetadata.ts'
import type { ServiceMessages } from '../runtime/serviceMessages.ts'
import type { StatusTracker } from '../runtime/status.ts'
import { PaymentsInFlight } from './paymentsInFlight.ts'
import { hasCode } from '../../errors.ts'

/**
 * The node's best knowledge of the chain now (docs/decisions/0056): its confirmed head (latest − confirmations) as
 * last seen, extrapolated at the chain's block time while the endpoint is out of reach, and whether it is.
 */
export type ChainNow = { headBlock: bigint; reachable: boolean }

/** The store's reads: payment history, events, chain events, and the whole store as a dump. Only the engine writes. */
export type StoreReads = Pick<Storage, 'payments' | 'sentPayment' | 'events' | 'chainEvents' | 'exportDump'>

/**
 * What the user's actions and the node's services see of a node, as viem's actions see a `Client`: its state and
 * status, `dispatch`, its notices, the store's reads, the chain and the transaction queue, and the config. Not the
 * node itself: no lifecycle (run, stop) and none of the runtime's parts. One per node: `node.client`. Every action
 * takes it first (`sendPayment(node.client, {...})`); the REST routes, the worker and the tests call them so.
 */
export type NodeClient = {
  readonly address: Address
  readonly config: ResolvedNodeConfig
  /** The latest applied state (durable, or about to be): read-only. */
  readonly state: NodeState
  readonly status: NodeStatus
  /** Aborted once the node stops. */
  readonly stopped: AbortSignal
  /** This account's viem clients: every read of the chain and every signature of a transaction. */
  readonly chain: ChainClient
  /** This account's ordered transaction queue: every on-chain action of the node goes through it. */
  readonly queue: TransactionQueue
  readonly store: StoreReads
  /** Payments in flight, by target and identifier, and the slots that bound how many run at once. */
  readonly payments: PaymentsInFlight
  /** What a service signs and sends as the node outside the core (a RequestMonitoring), resent until acknowledged. */
  readonly serviceMessages: ServiceMessages
  /** The pathfinding service's client: routes for a payment, the announcements of our channels (docs/decisions/0073). */
  readonly pathfinder: Pathfinder
  /** What the node heard of others' channels, which its own routes use (docs/decisions/0074). */
  readonly gossip: Gossip
  /** Our channel with `partner` in `tokenNetwork`: the open one, else the latest. */
  channel(tokenNetwork: Address, partner: Address): Channel | undefined
  /**
   * A node's public key (64 bytes, x || y): from a message of it we received (in the state), else as the transport
   * authenticated it when the node came online (libp2p's PeerId inlines it). What a payment's secret is encrypted to.
   */
  publicKeyOf(address: Address): Hex | undefined
  /** Opens the transport's way to a node we will send to (a channel partner) ahead of the first message. */
  connect(peer: Address): void
  /** A node's presence record a third party handed on, checked as its own (and taken, with `take`); see routeMetadata.ts. */
  readonly peerRecord: PeerRecords
  /** Dispatches a change and waits until it is durable (its effects are under way); NodeStoppedError once stopped. */
  dispatch(change: StateChange): Promise<Applied>
  /**
   * Resolves once the state has synced the given block (chain events up to it are applied). It asks the follower
   * for its sync step (the one under way, if any: never a second sync of the same blocks, docs/decisions/0028);
   * a failing endpoint is asked again until the deadline, anything else (a refused commit) fails at once.
   */
  waitForBlock(blockNumber: bigint, timeoutMs?: number): Promise<void>
  /**
   * The chain now, as well as the node knows it: what a change that sets or judges a lock's expiry carries
   * (`headBlock`, `chainUnreachable`), so that a node behind the chain never counts from a stale block.
   */
  chainNow(): ChainNow
  /** Every notice from now on, until the returned function is called. */
  subscribe(listener: (notice: NodeNotice) => void): () => void
  /** The first notice `predicate` accepts; NodeStoppedError if the node stops first. */
  nextNotice(predicate: (notice: NodeNotice) => boolean): Promise<NodeNotice>
  report: Report
  /** Called after each durable commit with the seq of its last change, until the returned function is called. */
  onCommitted(listener: (seq: number) => void): () => void
  /** Called after each durable commit with its changes (after `onCommitted`'s listeners), until the returned function is called. */
  onApplied(listener: (applied: readonly Applied[]) => void): () => void
  /**
   * The state as of its last commit and what delivery was still sending then, taken at one instant (no commit can
   * come between the two): what a backup copy holds (docs/decisions/0034).
   */
  recoveryPoint(): { seq: number; state: NodeState; outbox: OutboxRecord[] }
  /**
   * What the messaging counted since start (GET /_debug/transport): delivery's messages sent, received and dropped by
   * why, and the transport's own counts (libp2p: frames and streams, and what its limits refused or held back).
   */
  messageStats(): { delivery: DeliveryStats; transport: Readonly<Record<string, number>> }
}

/** The node's parts a client is made over (createNode wires them). */
export type NodeClientParts = {
  config: ResolvedNodeConfig
  chain: ChainClient
  queue: TransactionQueue
  storage: StoreReads
  engine: Pick<Engine, 'current' | 'lastSeq' | 'dispatch' | 'settled'>
  /** What delivery still sends (unacknowledged): part of a recovery point; and the way to a partner, opened ahead. */
  delivery: Pick<Delivery, 'pending' | 'connect' | 'stats'>
  /** What the transport counts (messageStats). */
  transport: Pick<Transport, 'stats'>
  /** Public keys the transport authenticated, by lowercase address. */
  peerKeys: { get(address: string): Hex | undefined }
  /** Records a third party handed on, checked by the transport. */
  peerRecords: PeerRecords
  commits: Pick<EventBus<number>, 'subscribe'>
  applied: Pick<EventBus<readonly Applied[]>, 'subscribe'>
  follower: Pick<ChainFollower, 'syncOnce'>
  status: Pick<StatusTracker, 'current' | 'progressed' | 'headBlock' | 'reachable'>
  notices: Pick<EventBus<NodeNotice>, 'subscribe'>
  stopped: AbortSignal
  report: Report
  /** How many payments may run at once. */
  paymentSlots: number
  serviceMessages: ServiceMessages
  pathfinder: Pathfinder
  gossip: Gossip
}

export function createNodeClient(p: NodeClientParts): NodeClient {
  const { engine, stopped } = p
  // What waits for a notice (a payment's outcome) fails when the node stops: one entry per waiter, dropped when it
  // resolves, and one listener on the signal for them all (none per payment).
  const waiters = new Set<(error: Error) => void>()
  stopped.addEventListener('abort', () => {
    for (const fail of [...waiters]) fail(new NodeStoppedError())
  })

  async function waitForBlock(blockNumber: bigint, timeoutMs = p.config.confirmationTimeoutMs): Promise<void> {
    const deadline = Date.now() + timeoutMs
    let endpointError: unknown
    while (engine.current.blockNumber < blockNumber) {
      if (stopped.aborted) throw new NodeStoppedError()
      // The endpoint failing is the clearer reason when it is one (CHAIN_RPC); else the chain is not deep enough yet.
      if (Date.now() > deadline) throw endpointError ?? new ConfirmationTimeoutError(blockNumber, engine.current.blockNumber, timeoutMs)
      const synced = await p.follower.syncOnce().catch((error: unknown) => {
        if (!hasCode(error, 'CHAIN_RPC')) throw error
        endpointError = error
        return false
      })
      if (!synced) await new Promise((r) => setTimeout(r, 20))
      p.status.progressed()
    }
    await engine.settled()
  }

  function nextNotice(predicate: (notice: NodeNotice) => boolean): Promise<NodeNotice> {
    if (stopped.aborted) return Promise.reject(new NodeStoppedError())
    return new Promise((resolve, reject) => {
      const off = p.notices.subscribe((notice) => {
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
        waiters.delete(fail)
      }
      waiters.add(fail)
    })
  }

  const { storage } = p
  return {
    address: p.chain.address,
    config: p.config,
    get state() {
      return engine.current
    },
    get status() {
      return p.status.current
    },
    stopped,
    chain: p.chain,
    queue: p.queue,
    store: {
      payments: (query) => storage.payments(query),
      sentPayment: (target, identifier) => storage.sentPayment(target, identifier),
      events: (page) => storage.events(page),
      chainEvents: (query) => storage.chainEvents(query),
      exportDump: (options) => storage.exportDump(options),
    },
    payments: new PaymentsInFlight(p.paymentSlots),
    serviceMessages: p.serviceMessages,
    pathfinder: p.pathfinder,
    gossip: p.gossip,
    channel: (tokenNetwork, partner) => channelWith(engine.current, tokenNetwork, partner),
    publicKeyOf: (address) => publicKeyOf(engine.current, address) ?? p.peerKeys.get(address.toLowerCase()),
    connect: (peer) => p.delivery.connect(peer),
    peerRecord: p.peerRecords,
    dispatch: (change) => (stopped.aborted ? Promise.reject(new NodeStoppedError()) : engine.dispatch(change)),
    waitForBlock,
    chainNow: () => ({ headBlock: p.status.headBlock(), reachable: p.status.reachable }),
    subscribe: (listener) => p.notices.subscribe(listener),
    nextNotice,
    report: p.report,
    onCommitted: (listener) => p.commits.subscribe(listener),
    onApplied: (listener) => p.applied.subscribe(listener),
    // Synchronous: the engine hands each commit to the effect handler (and so to delivery) in the same tick as it
    // takes its state, so between two ticks the state and delivery's queue are of the same commit.
    recoveryPoint: () => ({ seq: engine.lastSeq, state: engine.current, outbox: p.delivery.pending() }),
    messageStats: () => ({ delivery: p.delivery.stats(), transport: p.transport.stats?.() ?? {} }),
  }
}
