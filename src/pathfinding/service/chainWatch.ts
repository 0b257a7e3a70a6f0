import type { Address } from 'viem'
import { createBlockWatcher, type BlockWatcher, type SyncProgress } from '../../chain/blockWatcher.ts'
import type { ChainClient } from '../../chain/chainClient.ts'
import type { Deployment } from '../../chain/deployment.ts'
import { syncChainEvents } from '../../chain/eventSync.ts'
import { LogChunkSize } from '../../chain/getLogsByChunk.ts'
import { SyncLoop } from '../../chain/syncLoop.ts'
import type { StoredChainEvent } from '../../storage/storage.ts'
import { channelAfterEvent, pathfindingEventOf } from '../channel.ts'
import { DEPOSIT_MARGIN_FACTOR } from '../iou.ts'
import type { PfsStore, PfsTx } from './store.ts'

export type ChainWatchParameters = {
  chain: ChainClient
  deployment: Deployment
  store: PfsStore
  /** Blocks on top of a block before its events count (the block watcher's). */
  confirmations: bigint
  /** Milliseconds between looks at the chain. */
  pollingInterval: number
  /** After each look (new blocks or not): claims may be due now. */
  onLooked(): void
  onError(where: 'chain sync' | 'chain reorg', error: unknown): void
}

/**
 * Follows the chain for the pathfinding service (docs/decisions/0072), as the monitoring service's watch does: the block
 * watcher hands out confirmed ranges, syncChainEvents fetches the registry's, every token network's and UserDeposit's
 * events, and each range is applied in one store step with the new sync mark: the channels (their opening, deposits,
 * withdrawals, close and settlement: src/pathfinding/channel.ts), and the IOU sessions a sender's deposit no longer
 * covers well (a withdrawal planned, its balance drawn down), which are then claimed at once. The service's view follows
 * the store once a step is durable.
 */
export class ChainWatch {
  private readonly watcher: BlockWatcher
  private readonly chunkSize = new LogChunkSize()
  private readonly loop: SyncLoop

  constructor(private readonly p: ChainWatchParameters) {
    const sync = p.store.sync
    const first = BigInt(p.deployment.contracts.TokenNetworkRegistry.blockNumber)
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

  start(): void {
    this.loop.start()
  }

  stop(): Promise<void> {
    return this.loop.stop()
  }

  private async syncStep(): Promise<boolean> {
    const event = await this.watcher.poll()
    if (!event) return false
    if (event.type === 'reorg') {
      // The blocks after the common ancestor come again; their events apply again, idempotently.
      this.p.onError('chain reorg', new Error(`blocks from ${event.resyncFrom} were replaced${event.deep ? ' (deeper than remembered)' : ''}`))
      return true
    }
    const { TokenNetworkRegistry, SecretRegistry, UserDeposit } = this.p.deployment.contracts
    const known: Address[] = this.p.store.sync?.tokenNetworks ?? []
    const { events, tokenNetworks } = await syncChainEvents(this.p.chain.publicClient, {
      contracts: { tokenNetworkRegistry: TokenNetworkRegistry.address, secretRegistry: SecretRegistry.address, userDeposit: UserDeposit.address },
      tokenNetworks: known,
      fromBlock: event.fromBlock,
      toBlock: event.toBlock,
      defaultRevealTimeout: 0n,
      chunkSize: this.chunkSize,
    })
    await this.p.store.transact((tx) => {
      for (const e of events) {
        const followed = pathfindingEventOf(e.change)
        if (followed && followed.type !== 'tokenNetworkCreated') {
          const next = channelAfterEvent(tx.channel(followed.tokenNetwork, followed.channelId), followed)
          if (next) tx.putChannel(next)
          else tx.deleteChannel(followed.tokenNetwork, followed.channelId)
        } else if (!followed) depositEvent(tx, e.event)
      }
      const recentBlocks = [...(tx.sync()?.recentBlocks ?? []).filter((b) => b.number < event.fromBlock), ...event.tail].slice(-32)
      tx.putSync({ syncedBlock: event.toBlock, recentBlocks, tokenNetworks })
    })
    this.watcher.synced(event)
    return true
  }
}

/**
 * A UserDeposit event: a sender whose balance left after a planned withdrawal, or after a service was paid from it,
 * no longer covers its IOU to us with the margin, has its session claimed at once (if worth it) rather than near its
 * end. The other events of the contract say nothing here.
 */
function depositEvent(tx: PfsTx, event: StoredChainEvent): void {
  const [owner, left] =
    event.name === 'WithdrawPlanned'
      ? [event.args.withdrawer as Address, event.args.plannedBalance as bigint]
      : event.name === 'BalanceReduced'
        ? [event.args.owner as Address, event.args.newBalance as bigint]
        : [undefined, 0n]
  if (!owner) return
  const active = tx.activeIou(owner)
  if (!active || active.atRisk || left >= active.iou.amount * DEPOSIT_MARGIN_FACTOR) return
  tx.putIou({ ...active, atRisk: true, note: `${event.name} in block ${event.blockNumber}: the deposit left, ${left}, no longer covers the IOU twice` })
}
