import type { Address } from 'viem'
import type { BlockRange, BlockWatcher, BlockWatcherEvent, SyncProgress } from '../chain/blockWatcher.ts'
import type { SyncedChainEvent } from '../chain/chainEvents.ts'
import type { Applied, Engine } from './engine.ts'

export type ChainFollowerParameters = {
  engine: Pick<Engine, 'dispatch' | 'current'>
  watcher: BlockWatcher
  /** The followed events of a range (syncChainEvents over the node's contracts and these token networks). */
  events(range: { fromBlock: bigint; toBlock: bigint; tokenNetworks: Address[] }): Promise<SyncedChainEvent[]>
  /** A reorg deeper than the confirmations, or a failed poll: reported, never fatal. */
  onError(where: 'chain sync' | 'chain reorg', error: unknown): void
}

/**
 * Follows the chain for one node: each range of confirmed blocks the watcher hands out becomes state changes
 * (one per event, and the block itself), committed together, so a range is either synced or not at all. Only
 * confirmed blocks are acted on; a reorg of them is reported and the range synced again (re-applied events are
 * idempotent in the core).
 */
export class ChainFollower {
  private syncedBlockValue: bigint

  constructor(
    private readonly p: ChainFollowerParameters,
    syncedBlock: bigint,
  ) {
    this.syncedBlockValue = syncedBlock
  }

  /** The last block whose events are applied and durable. */
  get syncedBlock(): bigint {
    return this.syncedBlockValue
  }

  progress(): SyncProgress {
    return this.p.watcher.progress()
  }

  /** Looks at the chain once and applies what is new; false when there was nothing. */
  async syncOnce(): Promise<boolean> {
    const event = await this.p.watcher.poll()
    if (!event) return false
    await this.apply(event)
    if (event.type === 'blocks') this.p.watcher.synced(event)
    return true
  }

  /** Syncs until nothing is new (or `stopping()` says so): the first catch-up before the node is ready. */
  async catchUp(stopping: () => boolean): Promise<void> {
    while (!stopping() && (await this.syncOnce()));
  }

  /** Follows the chain from now on, every polling interval. */
  start(): void {
    this.p.watcher.start(
      (event) => this.apply(event),
      (error) => this.p.onError('chain sync', error),
    )
  }

  stop(): Promise<void> {
    return this.p.watcher.stop()
  }

  private async apply(event: BlockWatcherEvent): Promise<void> {
    if (event.type === 'reorg') {
      this.p.onError('chain reorg', new Error(`blocks from ${event.resyncFrom} were replaced${event.deep ? ' (deeper than remembered)' : ''}`))
      return
    }
    await this.applyRange(event)
  }

  private async applyRange(range: BlockRange): Promise<void> {
    const tokenNetworks = Object.keys(this.p.engine.current.tokenNetworks) as Address[]
    const events = await this.p.events({ fromBlock: range.fromBlock, toBlock: range.toBlock, tokenNetworks })
    // Dispatched together, the engine commits them in one batch with the block and the synced mark.
    const pending: Promise<Applied>[] = []
    for (const e of events) if (e.change) pending.push(this.p.engine.dispatch(e.change, { chainEvents: [e.event] }))
    const rawOnly = events.filter((e) => !e.change).map((e) => e.event)
    pending.push(this.p.engine.dispatch({ type: 'block', blockNumber: range.toBlock }, { meta: { syncedBlock: range.toBlock }, chainEvents: rawOnly }))
    await Promise.all(pending)
    this.syncedBlockValue = range.toBlock
  }
}
