import type { Address } from 'viem'
import { createBlockWatcher, type BlockWatcher, type SyncProgress } from '../chain/blockWatcher.ts'
import type { ChainClient } from '../chain/chainClient.ts'
import type { Deployment } from '../chain/deployment.ts'
import { syncChainEvents } from '../chain/eventSync.ts'
import { LogChunkSize } from '../chain/getLogsByChunk.ts'
import { SyncLoop } from '../chain/syncLoop.ts'
import { applyChainEvent } from './channelEvents.ts'
import type { MonitorStore } from './store.ts'

export type ChainWatchParameters = {
  chain: ChainClient
  deployment: Deployment
  store: MonitorStore
  /** Blocks on top of a block before its events count (the block watcher's). */
  confirmations: bigint
  /** Milliseconds between looks at the chain. */
  pollingInterval: number
  /** After each look (new blocks or not): the duties may be due now. */
  onLooked(): void
  onError(where: 'chain sync' | 'chain reorg', error: unknown): void
}

/**
 * Follows the chain for the service: the block watcher hands out confirmed ranges (and reorgs), syncChainEvents
 * fetches every token network's channel events and MonitoringService's, and each range's events are applied to the
 * watched channels (channelEvents.ts) in one store step together with the new sync mark: a range is applied whole
 * or not at all, and a restart goes on after the last one. One sync at a time (chain/syncLoop.ts).
 */
export class ChainWatch {
  private readonly watcher: BlockWatcher
  private readonly chunkSize = new LogChunkSize()
  private readonly loop: SyncLoop

  constructor(private readonly p: ChainWatchParameters) {
    const sync = p.store.sync
    const { TokenNetworkRegistry, MonitoringService } = p.deployment.contracts
    const first = BigInt(Math.min(TokenNetworkRegistry.blockNumber, MonitoringService.blockNumber))
    this.watcher = createBlockWatcher(p.chain.publicClient, {
      fromBlock: sync?.syncedBlock ?? first - 1n,
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
    const { TokenNetworkRegistry, SecretRegistry, MonitoringService } = this.p.deployment.contracts
    const known: Address[] = this.p.store.sync?.tokenNetworks ?? []
    const { events, tokenNetworks } = await syncChainEvents(this.p.chain.publicClient, {
      contracts: { tokenNetworkRegistry: TokenNetworkRegistry.address, secretRegistry: SecretRegistry.address, monitoringService: MonitoringService.address },
      tokenNetworks: known,
      fromBlock: event.fromBlock,
      toBlock: event.toBlock,
      defaultRevealTimeout: 0n,
      chunkSize: this.chunkSize,
    })
    const service = this.p.chain.address
    await this.p.store.transact((tx) => {
      for (const e of events) applyChainEvent(tx, e.event, service)
      const recentBlocks = [...(tx.sync()?.recentBlocks ?? []).filter((b) => b.number < event.fromBlock), ...event.tail].slice(-32)
      tx.putSync({ syncedBlock: event.toBlock, recentBlocks, tokenNetworks })
    })
    this.watcher.synced(event)
    return true
  }
}
