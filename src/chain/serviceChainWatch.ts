import type { Address } from 'viem'
import { createBlockWatcher, type BlockRef, type BlockWatcher, type SyncProgress } from './blockWatcher.ts'
import type { SyncedChainEvent } from './chainEvents.ts'
import type { ChainClient } from './chainClient.ts'
import { syncChainEvents, type ChainContracts } from './eventSync.ts'
import { LogChunkSize } from './getLogsByChunk.ts'
import { SyncLoop } from './syncLoop.ts'

/** Where a service's watch is, kept in its store with each range applied. */
export type SyncMark = {
  syncedBlock: bigint
  /** The last synced blocks' hashes (the block watcher's reorg check across restarts). */
  recentBlocks: BlockRef[]
  /** Every token network known so far, in creation order. */
  tokenNetworks: Address[]
}

/** What the watch needs of a store step: the sync mark, as the batch leaves it, and its new value. */
export type SyncMarkSteps = {
  /** Only the instance holding the service's lease follows the chain into the store (docs/decisions/0077). */
  requireLease(): void
  sync(): SyncMark | undefined
  putSync(sync: SyncMark): void
}

/** What the watch needs of a service's store: its sync mark as last made durable, and its steps (group commit). */
export type SyncMarkStore<Tx extends SyncMarkSteps> = {
  readonly sync: SyncMark | undefined
  transact<T>(step: (tx: Tx) => T): Promise<T>
}

export type ServiceChainWatchParameters<Tx extends SyncMarkSteps> = {
  chain: Pick<ChainClient, 'publicClient'>
  store: SyncMarkStore<Tx>
  /** The contracts whose events are fetched (the registry, the secret registry, and the service's own). */
  contracts: ChainContracts
  /** The first block with an event the service follows (the earliest of its contracts' deployments). */
  firstBlock: bigint
  /** Applies a range's events, in order, in the store step that also puts the range's sync mark. */
  apply(tx: Tx, events: readonly SyncedChainEvent[]): void
  /** Blocks on top of a block before its events count (the block watcher's). */
  confirmations: bigint
  /** Milliseconds between looks at the chain. */
  pollingInterval: number
  /** After each look (new blocks or not): the service's work may be due now. */
  onLooked(): void
  onError(where: 'chain sync' | 'chain reorg', error: unknown): void
}

/**
 * Follows the chain for a service process (the monitoring service, the pathfinding service): the block watcher
 * hands out confirmed ranges (and reorgs), syncChainEvents fetches the followed contracts' and every token network's
 * events, and each range's events are applied in one store step together with the new sync mark: a range is applied
 * whole or not at all, and a restart goes on after the last one. One sync at a time (syncLoop.ts).
 */
export class ServiceChainWatch<Tx extends SyncMarkSteps> {
  private readonly watcher: BlockWatcher
  private readonly chunkSize = new LogChunkSize()
  private readonly loop: SyncLoop

  constructor(private readonly p: ServiceChainWatchParameters<Tx>) {
    const sync = p.store.sync
    this.watcher = createBlockWatcher(p.chain.publicClient, {
      fromBlock: sync?.syncedBlock ?? p.firstBlock - 1n,
      confirmations: p.confirmations,
      maxRange: 10_000n,
      ...(sync ? { recentBlocks: sync.recentBlocks } : {}),
    })
    this.loop = new SyncLoop({
      step: () => this.syncStep(),
      pollingInterval: p.pollingInterval,
      onError: (error) => p.onError('chain sync', error),
      afterRound: () => p.onLooked(),
    })
  }

  progress(): SyncProgress {
    return this.watcher.progress()
  }

  /** Syncs until nothing is new: the catch-up at start. */
  catchUp(): Promise<void> {
    return this.loop.catchUp()
  }

  /** Follows the chain every polling interval from now on; a failed round is reported and tried again. */
  start(): void {
    this.loop.start()
  }

  stop(): Promise<void> {
    return this.loop.stop()
  }

  /** One look at the chain, or the one under way: true when something was new. */
  syncOnce(): Promise<boolean> {
    return this.loop.syncOnce()
  }

  private async syncStep(): Promise<boolean> {
    const event = await this.watcher.poll()
    if (!event) return false
    if (event.type === 'reorg') {
      // The watcher hands the blocks after the common ancestor out again; their events apply again (idempotently).
      this.p.onError('chain reorg', new Error(`blocks from ${event.resyncFrom} were replaced${event.deep ? ' (deeper than remembered)' : ''}`))
      return true
    }
    const { events, tokenNetworks } = await syncChainEvents(this.p.chain.publicClient, {
      contracts: this.p.contracts,
      tokenNetworks: this.p.store.sync?.tokenNetworks ?? [],
      fromBlock: event.fromBlock,
      toBlock: event.toBlock,
      defaultRevealTimeout: 0n,
      chunkSize: this.chunkSize,
    })
    await this.p.store.transact((tx) => {
      tx.requireLease()
      this.p.apply(tx, events)
      const recentBlocks = [...(tx.sync()?.recentBlocks ?? []).filter((b) => b.number < event.fromBlock), ...event.tail].slice(-32)
      tx.putSync({ syncedBlock: event.toBlock, recentBlocks, tokenNetworks })
    })
    this.watcher.synced(event)
    return true
  }
}
