import { describe, expect, test } from 'vitest'
import type { PendingTransaction } from '../../../src/chain/transactionQueue.ts'
import { observeSync, observeTransactions } from '../../../src/metrics/chainMetrics.ts'
import { Metrics } from '../../../src/metrics/registry.ts'
import { parsePrometheusText, sampleValue } from '../../support/prometheusText.ts'

const read = async (metrics: Metrics) => parsePrometheusText(await metrics.text())
const tx = (nonce: number, attempts: number, createdAt: number): PendingTransaction => ({
  nonce,
  attempts,
  createdAt,
  status: 'sent',
  description: `call ${nonce}`,
  hash: `0x${String(nonce).padStart(64, '0')}`,
  maxPricePerGas: 1n,
})

describe('observeTransactions', () => {
  test("pending and the oldest one's wait, from pending() at each scrape", async () => {
    const metrics = new Metrics({ command: 'serve', processMetrics: false })
    let pending: PendingTransaction[] = []
    let now = 100_000
    observeTransactions(
      metrics,
      () => ({ pending: () => pending, replaced: 0 }),
      () => now,
    )
    let text = await read(metrics)
    expect([sampleValue(text, 'sluice_transactions_pending'), sampleValue(text, 'sluice_transactions_pending_oldest_seconds')]).toEqual([0, 0])
    pending = [tx(4, 1, 40_000), tx(5, 1, 70_000)]
    now = 130_000
    text = await read(metrics)
    expect([sampleValue(text, 'sluice_transactions_pending'), sampleValue(text, 'sluice_transactions_pending_oldest_seconds')]).toEqual([2, 90])
  })

  test("replacements: the queue's own count since it started, whatever was mined between two scrapes", async () => {
    const metrics = new Metrics({ command: 'monitor', processMetrics: false })
    const queue = { pending: () => [tx(1, 1, 0)], replaced: 0 }
    observeTransactions(metrics, () => queue)
    const replaced = async () => sampleValue(await read(metrics), 'sluice_transactions_replaced_total')
    expect(await replaced()).toBe(0)
    queue.replaced = 3
    queue.pending = () => []
    expect(await replaced()).toBe(3)
    expect(await replaced()).toBe(3)
  })
})

test('observeSync: the head less the synced block, never below 0, from the status at each scrape', async () => {
  const metrics = new Metrics({ command: 'serve', processMetrics: false })
  let status = { headBlock: 120n, syncedBlock: 100n }
  observeSync(metrics, () => status)
  let text = await read(metrics)
  expect([
    sampleValue(text, 'sluice_chain_head_block'),
    sampleValue(text, 'sluice_chain_synced_block'),
    sampleValue(text, 'sluice_chain_sync_lag_blocks'),
  ]).toEqual([120, 100, 20])
  status = { headBlock: 99n, syncedBlock: 100n }
  text = await read(metrics)
  expect(sampleValue(text, 'sluice_chain_sync_lag_blocks')).toBe(0)
})
