import type { ChainFollowing, NodeNotice, NodeStatus } from '../notices.ts'
import type { ChainFollower } from './chainFollower.ts'
import { estimateHead } from './chainHead.ts'
import type { EventBus } from './eventBus.ts'

export type StatusTrackerOptions = {
  /** The follower's polling interval (ms): how far behind a node that follows may be is counted from it. */
  pollingInterval: number
  now?: () => number
}

/**
 * The node's status as /status and the event stream show it: its lifecycle (`syncing` until the first catch-up with
 * the chain is done, then `ready`, then `stopped`) and how it follows the chain: within a few blocks of the confirmed
 * head, behind it since when, or unable to reach it since when (and why). Listeners are told when either changes;
 * the blocks left to sync are read when asked for.
 */
export class StatusTracker {
  private lifecycle: NodeStatus['status'] = 'syncing'
  private behindSince: number | undefined
  /** What the last status notice said (lifecycle and how the node follows): a notice is sent when that changes. */
  private told = 'syncing/following'
  private readonly now: () => number

  constructor(
    private readonly follower: Pick<ChainFollower, 'progress' | 'syncedBlock' | 'head' | 'endpoint'>,
    private readonly notices: Pick<EventBus<NodeNotice>, 'publish'>,
    private readonly options: StatusTrackerOptions,
  ) {
    this.now = options.now ?? Date.now
  }

  get current(): NodeStatus {
    const syncedBlock = this.follower.syncedBlock
    const headBlock = this.headBlock()
    const blocksToSync = headBlock > syncedBlock ? headBlock - syncedBlock : 0n
    return { status: this.lifecycle, blocksToSync, syncedBlock, headBlock, chain: this.following(blocksToSync) }
  }

  /** The chain's confirmed head as the node knows it now: as last seen, extrapolated while the endpoint is out of reach. */
  headBlock(): bigint {
    return estimateHead(this.follower.head(), this.now())
  }

  /** Whether the endpoint answers the sync's reads (it may still fail now and then). */
  get reachable(): boolean {
    return !this.follower.endpoint().unreachable
  }

  /** The sync moved on or failed (a step, a commit that synced blocks): listeners hear of a change in how it follows. */
  progressed(): void {
    this.tell()
  }

  /** The first catch-up is done: `ready`, told to the listeners. */
  ready(): void {
    this.lifecycle = 'ready'
    this.tell(true)
  }

  /** Told to the listeners last: subscribers that outlive the node (the API's event streams) learn that nothing more will come. */
  stopped(): void {
    this.lifecycle = 'stopped'
    this.tell(true)
  }

  /**
   * Behind means more blocks to sync than two polling intervals bring, and at least 2: a node that follows is often a
   * block or two back between its looks at the chain.
   */
  private following(blocksToSync: bigint): ChainFollowing {
    const endpoint = this.follower.endpoint()
    if (endpoint.unreachable && endpoint.failingSince !== undefined) {
      const error = endpoint.lastError
      return { state: 'unreachable', since: endpoint.failingSince, error: { code: error?.code ?? 'CHAIN_RPC', message: error?.message ?? 'no answer' } }
    }
    const blockTimeMs = this.follower.head().blockTimeMs ?? 1_000
    const bound = BigInt(Math.max(2, Math.ceil((2 * this.options.pollingInterval) / blockTimeMs)))
    if (blocksToSync > bound) return { state: 'behind', since: this.behindSince ?? this.now() }
    return { state: 'following' }
  }

  /** Keeps when the node fell behind; a status notice when the lifecycle or the way it follows changed (or always). */
  private tell(always = false): void {
    const status = this.current
    this.behindSince = status.chain.state === 'behind' ? status.chain.since : undefined
    // During the first catch-up the node is behind by definition: only the endpoint failing is news then.
    const following = status.status === 'syncing' && status.chain.state === 'behind' ? 'following' : status.chain.state
    const key = `${status.status}/${following}`
    if (!always && key === this.told) return
    this.told = key
    this.notices.publish({ type: 'status', status })
  }
}
