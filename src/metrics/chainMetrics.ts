import { rpcFailureKind, type RpcFailure } from '../chain/rpcFailure.ts'
import type { TransactionQueue } from '../chain/transactionQueue.ts'
import type { Metrics } from './registry.ts'

// What every process that follows the chain shows alike: a node (`sluice serve`) and the two services.

/** Counts the endpoints' failures by kind (rpcFailureKind): give the result to RpcEndpoints' `onFailure`. */
export function countRpcFailures(metrics: Metrics): (told: { endpoint: string; failure: RpcFailure }) => void {
  const errors = metrics.counter('rpc_errors_total', "failures of the chain's JSON-RPC endpoints, by kind (each passes the call on or retries it)", ['kind'])
  return ({ failure }) => errors.inc({ kind: rpcFailureKind(failure) })
}

/** How far the process's sync lags the chain: the confirmed head it knows less the block it has synced (0 when caught up), read from its status when scraped. */
export function observeSync(metrics: Metrics, read: () => { headBlock: bigint; syncedBlock: bigint }): void {
  const at = (pick: (s: { headBlock: bigint; syncedBlock: bigint }) => bigint) =>
    function collect(this: { set(value: number): void }) {
      this.set(Number(pick(read())))
    }
  metrics.gauge(
    'chain_head_block',
    "the chain's confirmed head as this process knows it",
    [],
    at((s) => s.headBlock),
  )
  metrics.gauge(
    'chain_synced_block',
    'the block up to which its events are applied',
    [],
    at((s) => s.syncedBlock),
  )
  metrics.gauge(
    'chain_sync_lag_blocks',
    'confirmed blocks not synced yet: the head less the synced block',
    [],
    at((s) => (s.headBlock > s.syncedBlock ? s.headBlock - s.syncedBlock : 0n)),
  )
}

/**
 * The account's transactions under way (sent and not confirmed, or not sent yet) and the age of the oldest, from the
 * queue's `pending()` when scraped, and the replacements at a higher fee the queue signed since it started.
 */
export function observeTransactions(
  metrics: Metrics,
  queue: () => Pick<TransactionQueue, 'pending' | 'replaced'> | undefined,
  now: () => number = Date.now,
): void {
  metrics.gauge('transactions_pending', "the account's transactions under way: signed and not yet confirmed", [], function collect() {
    this.set(queue()?.pending().length ?? 0)
  })
  metrics.gauge(
    'transactions_pending_oldest_seconds',
    'how long the oldest transaction under way has waited since it was queued (0: none)',
    [],
    function collect() {
      const oldest = Math.min(...(queue()?.pending() ?? []).map((t) => t.createdAt))
      this.set(Number.isFinite(oldest) ? Math.max(0, (now() - oldest) / 1000) : 0)
    },
  )
  metrics.counter('transactions_replaced_total', 'transactions sent again at a higher fee (a new signed version of the same nonce)', [], function collect() {
    this.reset()
    this.inc(queue()?.replaced ?? 0)
  })
}

/** A service's sync (its confirmed head: the latest block less `confirmations`) and its transactions (monitor, pathfinding). */
export function observeServiceChain(
  metrics: Metrics,
  service: { status(): { syncedBlock: bigint; latestBlock: bigint }; queue: Pick<TransactionQueue, 'pending' | 'replaced'> },
  confirmations: number,
): void {
  observeSync(metrics, () => {
    const { syncedBlock, latestBlock } = service.status()
    const headBlock = latestBlock - BigInt(confirmations)
    return { headBlock: headBlock > 0n ? headBlock : 0n, syncedBlock }
  })
  observeTransactions(metrics, () => service.queue)
}
