import type { NodeNotice, NodeStatus } from '../notices.ts'
import type { ChainFollower } from './chainFollower.ts'
import type { EventBus } from './eventBus.ts'

/**
 * The node's status as /status and the event stream show it: `syncing` until the first catch-up with the chain is
 * done, then `ready`, then `stopped`; with the blocks left to sync and the last block synced.
 */
export class StatusTracker {
  private value: NodeStatus

  constructor(
    private readonly follower: Pick<ChainFollower, 'progress' | 'syncedBlock'>,
    private readonly notices: Pick<EventBus<NodeNotice>, 'publish'>,
  ) {
    this.value = { status: 'syncing', blocksToSync: 0n, syncedBlock: follower.syncedBlock }
  }

  get current(): NodeStatus {
    return this.value
  }

  /** The sync moved on (a commit that synced blocks, a sync step someone waited for): the progress follows, quietly. */
  progressed(): void {
    const progress = this.follower.progress()
    this.value = { ...this.value, blocksToSync: progress.blocksToSync, syncedBlock: this.follower.syncedBlock }
  }

  /** The first catch-up is done: `ready`, told to the listeners. */
  ready(syncedBlock: bigint): void {
    const progress = this.follower.progress()
    this.value = { status: 'ready', blocksToSync: progress.blocksToSync, syncedBlock }
    this.notices.publish({ type: 'status', status: this.value })
  }

  /** Told to the listeners last: subscribers that outlive the node (the API's event streams) learn that nothing more will come. */
  stopped(): void {
    this.value = { ...this.value, status: 'stopped' }
    this.notices.publish({ type: 'status', status: this.value })
  }
}
