import type { Address } from 'viem'
import type { BlockRange, BlockWatcher, HeadObservation, SyncProgress } from '../../chain/blockWatcher.ts'
import { SyncLoop } from '../../chain/syncLoop.ts'
import type { EndpointHealth } from '../../chain/syncReads.ts'
import { byChainPosition, type SyncedChainEvent } from '../../chain/chainEvents.ts'
import { hasCode } from '../../errors.ts'
import type { Applied, Engine } from './engine.ts'

export type ChainFollowerParameters = {
  engine: Pick<Engine, 'dispatch' | 'current'>
  watcher: BlockWatcher
  /** The followed events of a range (syncChainEvents over the node's contracts and these token networks). */
  events(range: { fromBlock: bigint; toBlock: bigint; tokenNetworks: Address[] }): Promise<SyncedChainEvent[]>
  /** Milliseconds between looks at the chain once `start`ed. */
  pollingInterval: number
  /**
   * A reorg deeper than the confirmations, or a failed sync of the loop: reported, never fatal. The endpoint failing
   * (ChainRpcError) is reported once when it begins, not at every round while it lasts: the status says it meanwhile.
   */
  onError(where: 'chain sync' | 'chain reorg', error: unknown): void
  /** What the sync's reads say of the endpoint (SyncReads.health). */
  endpoint?: () => EndpointHealth
  /** After each sync step, whatever came of it: the status looks again. */
  onStep?: () => void
}

/**
 * Follows the chain for one node: each range of confirmed blocks the watcher hands out becomes state changes
 * (one per event, and the block itself), committed together, so a range is either synced or not at all. Only
 * confirmed blocks are acted on; a reorg of them is reported and the range synced again (re-applied events are
 * idempotent in the core).
 *
 * One sync at a time (docs/decisions/0028, chain/syncLoop.ts): a sync step polls the watcher, applies the range and
 * acknowledges it, and whoever asks while a step is under way (the loop, the first catch-up, waitForBlock) shares
 * that step. Two steps side by side would be handed the same unacknowledged range and dispatch its events twice,
 * into one commit the store refuses.
 */
export class ChainFollower {
  private syncedBlockValue: bigint
  private readonly loop: SyncLoop
  /** The endpoint's failure has been reported and it has not answered a step since. */
  private failureReported = false

  constructor(
    private readonly p: ChainFollowerParameters,
    syncedBlock: bigint,
  ) {
    this.syncedBlockValue = syncedBlock
    this.loop = new SyncLoop({
      step: () => this.observedStep(),
      pollingInterval: p.pollingInterval,
      onError: (error) => this.failed(error),
    })
  }

  /** The last block whose events are applied and durable (lower again after a reorg, until it is synced again). */
  get syncedBlock(): bigint {
    return this.syncedBlockValue
  }

  progress(): SyncProgress {
    return this.p.watcher.progress()
  }

  /** The chain's head as last seen, and its block time. */
  head(): HeadObservation {
    return this.p.watcher.head()
  }

  /** What the sync's reads say of the endpoint: answering, failing since when, out of reach. */
  endpoint(): EndpointHealth {
    return this.p.endpoint?.() ?? { unreachable: false }
  }

  /** Looks at the chain once and applies what is new, or shares the step under way; false when nothing was new, or once stopped. */
  syncOnce(): Promise<boolean> {
    return this.loop.syncOnce()
  }

  /**
   * Syncs until nothing is new (or `stopping()` says so): the first catch-up before the node is ready. An endpoint
   * that fails (ChainRpcError) is reported and asked again every polling interval until it answers: what is synced
   * stays synced, and the status says the chain is out of reach meanwhile. Any other failure ends the catch-up.
   */
  async catchUp(stopping: () => boolean): Promise<void> {
    for (;;) {
      try {
        return await this.loop.catchUp(stopping)
      } catch (error) {
        if (!hasCode(error, 'CHAIN_RPC') || stopping()) throw error
        this.failed(error)
        await new Promise((r) => setTimeout(r, this.p.pollingInterval))
      }
    }
  }

  /** Follows the chain from now on, every polling interval; a failed round is reported and tried again at the next. */
  start(): void {
    this.loop.start()
  }

  /** Stops following; resolves once no step is under way (nothing is dispatched after). */
  stop(): Promise<void> {
    return this.loop.stop()
  }

  private async observedStep(): Promise<boolean> {
    try {
      const news = await this.syncStep()
      this.failureReported = false
      return news
    } finally {
      this.p.onStep?.()
    }
  }

  private failed(error: unknown): void {
    if (hasCode(error, 'CHAIN_RPC')) {
      if (this.failureReported) return
      this.failureReported = true
    }
    this.p.onError('chain sync', error)
  }

  private async syncStep(): Promise<boolean> {
    const event = await this.p.watcher.poll()
    if (!event) return false
    if (event.type === 'reorg') {
      // The watcher hands out the blocks after the common ancestor again: their events are to be applied again.
      if (event.commonAncestor < this.syncedBlockValue) this.syncedBlockValue = event.commonAncestor
      this.p.onError('chain reorg', new Error(`blocks from ${event.resyncFrom} were replaced${event.deep ? ' (deeper than remembered)' : ''}`))
      return true
    }
    await this.applyRange(event)
    this.p.watcher.synced(event)
    return true
  }

  private async applyRange(range: BlockRange): Promise<void> {
    // A range already applied (it cannot come in lockstep with the watcher, but nothing is applied twice).
    if (range.toBlock <= this.syncedBlockValue) return
    const tokenNetworks = Object.keys(this.p.engine.current.tokenNetworks) as Address[]
    const fetched = await this.p.events({ fromBlock: range.fromBlock, toBlock: range.toBlock, tokenNetworks })
    const events = inOrderOnce(fetched, max(this.syncedBlockValue, range.fromBlock - 1n), range.toBlock)
    // Dispatched together, the engine commits them in one batch with the block and the synced mark.
    const pending: Promise<Applied>[] = []
    for (const e of events) if (e.change) pending.push(this.p.engine.dispatch(e.change, { chainEvents: [e.event] }))
    const rawOnly = events.filter((e) => !e.change).map((e) => e.event)
    // The remembered hashes go with the synced mark: a restart checks them, so a reorg while the node was down is noticed.
    const meta = { syncedBlock: range.toBlock, recentBlocks: this.p.watcher.recentBlocksAfter(range) }
    pending.push(this.p.engine.dispatch({ type: 'block', blockNumber: range.toBlock }, { meta, chainEvents: rawOnly }))
    await Promise.all(pending)
    this.syncedBlockValue = range.toBlock
  }
}

/**
 * The events of blocks (after, toBlock], in chain order, one per position: the store refuses a commit with two
 * events at one position, and the engine stops at a refused commit. syncChainEvents already returns them so;
 * this is the last guard before the engine.
 */
function inOrderOnce(events: SyncedChainEvent[], after: bigint, toBlock: bigint): SyncedChainEvent[] {
  const sorted = events.filter(({ event }) => event.blockNumber > after && event.blockNumber <= toBlock).sort((a, b) => byChainPosition(a.event, b.event))
  return sorted.filter((e, i) => i === 0 || byChainPosition(sorted[i - 1]!.event, e.event) !== 0)
}

const max = (a: bigint, b: bigint) => (a > b ? a : b)
