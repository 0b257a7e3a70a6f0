// Storage: how many payment-sized commits per second each adapter makes durable, one after another as the
// node's dispatch loop commits them.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Address } from 'viem'
import type { LockedTransfer, Signed } from '../src/protocol/messages/types.ts'
import { readMessage } from '../src/protocol/messages/wire.ts'
import { openLevelStorage } from '../src/storage/levelStorage.ts'
import { openMemoryStorage } from '../src/storage/memoryStorage.ts'
import type { Commit, Storage } from '../src/storage/storage.ts'
import fixture from '../test/fixtures/messages/LockedTransfer.json' with { type: 'json' }
import { repeat, spread } from './measure.ts'

const identity = { chainId: 31337n, registry: '0x5FbDB2315678afecb367f032d93F642f64180aa3' as Address, address: fixture.signer as Address }
const transfer = readMessage(fixture.message) as Signed<LockedTransfer>

/** What one payment step leaves behind: the received message as a change, the message it queues, the ack of the last. */
function paymentCommit(seq: number): Commit {
  const { signature: _, ...unsigned } = transfer
  return {
    changes: [{ seq, time: Date.now(), change: { type: 'receive', message: transfer, sender: fixture.signer as Address } }],
    outbox: {
      put: [
        { key: `m${seq}`, recipient: transfer.recipient, message: unsigned, channelKey: 'tn:7', queuedAt: Date.now(), attempts: 0, nextAttemptAt: Date.now() },
      ],
      delete: [`m${seq - 1}`],
    },
  }
}

/** Commits per second into `storage`, in RUNS runs of `ms` after a warm-up: each run's rate. */
async function commitsPerSecond(storage: Storage, ms = 1000): Promise<number[]> {
  let seq = 1
  for (; seq <= 50; seq++) await storage.commit(paymentCommit(seq))
  return repeat(RUNS, async () => {
    const t0 = performance.now()
    let n = 0
    while (performance.now() - t0 < ms) {
      await storage.commit(paymentCommit(seq++))
      n++
    }
    return (n / (performance.now() - t0)) * 1000
  })
}

/** Repetitions of each throughput row (the median and the spread are printed). */
const RUNS = 3

export async function benchStorage(): Promise<Record<string, string>> {
  const rows: Record<string, string> = {}
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-'))
  try {
    const level = await openLevelStorage(identity, { dataDir })
    rows['LevelDB commits/s (batch, sync: true; 1 change + 1 outbox put + 1 delete)'] = spread(await commitsPerSecond(level))
    await level.close()
  } finally {
    await rm(dataDir, { recursive: true, force: true })
  }
  const memory = await openMemoryStorage(identity)
  rows['memory commits/s (structuredClone, not durable; same commit)'] = spread(await commitsPerSecond(memory))
  await memory.close()
  rows['IndexedDB commits/s'] = 'not measured here: fake-indexeddb is a JS model, not an engine (real IndexedDB runs in Chromium)'
  return rows
}
