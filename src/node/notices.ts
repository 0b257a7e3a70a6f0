import type { Address } from 'viem'
import type { RpcEndpointChange } from '../chain/rpcEndpoints.ts'
import type { TransactionRisk } from '../chain/transactionRisk.ts'
import type { NodeEvent, Transaction } from '../protocol/state/effects.ts'

/**
 * How the node follows the chain. `following`: its synced block is within a few blocks of the chain's confirmed head;
 * `behind`: further back than that, since `since` (unix ms); `unreachable`: the sync's reads failed for their whole
 * retry budget and the endpoint has not answered since, failing since `since`, `error` its last failure.
 */
export type ChainFollowing =
  | { state: 'following' }
  | { state: 'behind'; since: number }
  | { state: 'unreachable'; since: number; error: { code: string; message: string } }

/**
 * The node's status. `status` is its lifecycle: `syncing` during the first catch-up with the chain (the API answers
 * only /status and a few more), `ready` once it is done (every route answers, whatever happens to the chain later),
 * `stopped`. `chain` says how it follows the chain; what the API calls ready is both `ready` and `following`
 * (src/api/routes/node.ts): a node behind the chain or out of its reach does not say it is ready.
 */
export type NodeStatus = {
  status: 'syncing' | 'ready' | 'stopped'
  /** Confirmed blocks not synced yet: `headBlock − syncedBlock`. */
  blocksToSync: bigint
  syncedBlock: bigint
  /** The chain's confirmed head as the node knows it: as last seen, extrapolated while the endpoint is out of reach. */
  headBlock: bigint
  chain: ChainFollowing
}

/** Where a reported error came from: for logs and the event stream, never for deciding anything. */
export type ErrorSource =
  | 'node'
  | 'receive'
  | 'chain sync'
  | 'chain reorg'
  | 'transaction'
  | 'secret resolver'
  | 'connection manager'
  | 'notifications'
  | 'monitoring'
  | 'backup'
  | 'pathfinding'

/**
 * What a node tells whoever listens (the API's event stream, the CLI's log, actions waiting for an outcome): the
 * core's events, status changes, failed transactions (with the transaction, so a waiter can tell whether it was
 * its own), errors to report, and the chain's endpoints going down and coming back.
 */
export type NodeNotice =
  | NodeEvent
  | { type: 'status'; status: NodeStatus }
  | { type: 'transactionFailed'; transaction: Transaction; error: unknown }
  /**
   * A transaction with a deadline may miss it (`risk`), or no longer may (undefined), by `id`: the queue's (`nonce:<n>`)
   * for one it sent, the transaction intent's key for one the node could not send yet (docs/decisions/0054).
   */
  | { type: 'transactionRisk'; id: string; risk: TransactionRisk | undefined }
  | { type: 'error'; error: unknown; where: ErrorSource; detail?: string }
  /** One of the chain's endpoints went down, came back, or serves another chain (told once each time). */
  | ({ type: 'rpcEndpoint' } & RpcEndpointChange)
  | PathfindingNotice
  | PeerRecordNotice

/**
 * A node's presence record that a third party handed on (a pathfinding service's `address_metadata`, a LockedTransfer's
 * route metadata) and that was not used: not the node's own, malformed, or not to be checked here (docs/decisions/0073).
 */
export type PeerRecordNotice = { type: 'peerRecordDropped'; peer: Address; from: 'pathfinding service' | 'LockedTransfer'; reason: string }

/**
 * The pathfinding client (docs/decisions/0073): the service it uses (`chosen`), the service unusable and the node
 * routing locally meanwhile (`unavailable`, told once each time it changes; `available` when it answers again), a
 * payment routed locally for that reason (`routedLocally`), and the routes a service chose for a payment (`routes`).
 */
export type PathfindingNotice =
  | { type: 'pathfinding'; what: 'chosen'; url: string; address: Address; price: bigint; operator: string; registered: boolean }
  | { type: 'pathfinding'; what: 'unavailable'; url: string | undefined; reason: string }
  | { type: 'pathfinding'; what: 'available'; url: string }
  | { type: 'pathfinding'; what: 'routedLocally'; target: Address; amount: bigint; reason: string }
  | { type: 'pathfinding'; what: 'routes'; url: string; target: Address; amount: bigint; routes: { route: Address[]; fee: bigint }[]; iou: bigint | undefined }

/** Reports an error to the listeners (logs, the event stream); it decides nothing. Silent once the node stops. */
export type Report = (where: ErrorSource, error: unknown, detail?: string) => void
