import { isAddress, maxUint256 } from 'viem'
import { checkJournalEntry, checkJournalNonce } from './journalRecords.ts'
import { checkMetaPatch } from './meta.ts'
import { checkReceived } from './receivedRecords.ts'
import { checkSentLock, checkSentProof } from './sentRecords.ts'
import { StorageError, type Commit, type StorageIdentity, type StoredChainEvent } from './storage.ts'

/**
 * Refuses a batch that no adapter could key or order correctly, before any engine sees it, so every adapter
 * fails the same way and writes nothing. Values themselves are checked by the engine's encoder.
 */
export function checkCommit(batch: Commit, identity: StorageIdentity): void {
  uniqueSeqs(batch.changes ?? [], 'change')
  if (batch.snapshot) {
    checkSeq(batch.snapshot.seq, 'snapshot seq')
    if (typeof batch.snapshot.state !== 'object' || batch.snapshot.state === null) throw new StorageError('snapshot without a state')
  }
  if (batch.pruneChangesUpTo !== undefined) checkSeq(batch.pruneChangesUpTo, 'pruneChangesUpTo')
  uniqueSeqs(batch.events ?? [], 'event')
  uniqueSeqs(batch.payments ?? [], 'payment')
  for (const p of batch.payments ?? []) {
    checkAddress(p.token, 'payment token')
    checkAddress(p.partner, 'payment partner')
  }
  const positions = new Set<string>()
  for (const e of batch.chainEvents ?? []) {
    checkChainEvent(e)
    const at = `${e.blockNumber}:${e.logIndex}`
    if (positions.has(at)) throw new StorageError(`chain event at block ${e.blockNumber}, log ${e.logIndex} appears twice in one commit`)
    positions.add(at)
  }
  for (const part of [batch.outbox, batch.transactions]) {
    for (const record of part?.put ?? []) checkKey(record.key)
    for (const key of part?.delete ?? []) checkKey(key)
  }
  // The same key twice in one commit is allowed for these: the last one wins (a lock added and removed in one batch,
  // a journal entry put again with a second attempt).
  for (const p of batch.sentProofs ?? []) checkSentProof(p)
  for (const l of batch.sentLocks ?? []) checkSentLock(l)
  for (const r of batch.received ?? []) checkReceived(r)
  for (const e of batch.chainTransactions?.put ?? []) checkJournalEntry(e)
  for (const nonce of batch.chainTransactions?.delete ?? []) checkJournalNonce(nonce, 'journal nonce to delete')
  if (batch.meta) checkMetaPatch(batch.meta, identity)
}

/** Seqs are keys: non-negative safe integers (16 decimal digits at most). */
export function checkSeq(seq: unknown, what: string): number {
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) throw new StorageError(`invalid ${what}: ${String(seq)}`)
  return seq
}

/** Block numbers are keys too: as numbers in IndexedDB, so they must be safe integers. */
export function checkBlockNumber(block: unknown, what: string): number {
  if (typeof block !== 'bigint' || block < 0n || block > BigInt(Number.MAX_SAFE_INTEGER)) throw new StorageError(`invalid ${what}: ${String(block)}`)
  return Number(block)
}

function checkChainEvent(e: StoredChainEvent): void {
  checkBlockNumber(e.blockNumber, 'chain event blockNumber')
  checkSeq(e.logIndex, 'chain event logIndex')
  checkAddress(e.address, 'chain event address')
  if (e.tokenNetwork !== undefined) checkAddress(e.tokenNetwork, 'chain event tokenNetwork')
  if (e.channelId !== undefined && (typeof e.channelId !== 'bigint' || e.channelId < 0n || e.channelId > maxUint256)) {
    throw new StorageError(`invalid chain event channelId: ${String(e.channelId)}`)
  }
}

function uniqueSeqs(rows: { seq: number }[], what: string): void {
  const seen = new Set<number>()
  for (const row of rows) {
    if (seen.has(checkSeq(row.seq, `${what} seq`))) throw new StorageError(`${what} seq ${row.seq} appears twice in one commit`)
    seen.add(row.seq)
  }
}

function checkAddress(address: unknown, what: string): void {
  if (typeof address !== 'string' || !isAddress(address, { strict: false })) throw new StorageError(`invalid ${what}: ${String(address)}`)
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key === '') throw new StorageError(`invalid record key: ${String(key)}`)
}
