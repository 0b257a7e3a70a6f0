// Padding a node's history: copies of the rows real payments left, under fresh keys, written through the Storage
// port. The stored-payments curves (bench/curves.ts) pad LevelDB in Node and IndexedDB in a page (bench/idbPad.ts,
// built for the browser), so nothing here may need Node.
import type { Hex } from 'viem'
import type { Commit, PaymentRecord, SentLockRecord, SentProofRecord, Storage, StorageDump } from '../src/storage/storage.ts'

/**
 * What a payment leaves for good in the payer's store, per kind of row (the change log is pruned at each snapshot
 * and the outbox is emptied by acknowledgements, so neither grows with the history).
 */
export const HISTORY_KINDS = ['payments', 'events', 'sentProofs', 'sentLocks', 'received'] as const
export type HistoryKind = (typeof HISTORY_KINDS)[number]

/** Each kind's rows per real payment, and the rows the real payments left (the templates padding copies). */
export type PaymentShape = { perPayment: Record<HistoryKind, number>; templates: Record<HistoryKind, unknown[]>; bytesPerPayment: number; otherKinds: string }

/** Rows in each kind of `dump`: what to give paymentShape as `before`. */
export function rowCounts(dump: StorageDump): Record<string, number> {
  return Object.fromEntries(Object.entries(dump).flatMap(([kind, rows]) => (Array.isArray(rows) ? [[kind, rows.length]] : [])))
}

/** The rows `payments` real payments added to `dump` since `before`, and their size as `bytes` measures a row. */
export function paymentShape(dump: StorageDump, before: Record<string, number>, payments: number, bytes: (row: unknown) => number): PaymentShape {
  const perPayment = {} as Record<HistoryKind, number>
  const templates = {} as Record<HistoryKind, unknown[]>
  let total = 0
  for (const kind of HISTORY_KINDS) {
    const rows = dump[kind] ?? []
    const added = rows.length - (before[kind] ?? 0)
    perPayment[kind] = Math.max(0, added) / payments
    templates[kind] = added > 0 ? rows.slice(-added) : []
    for (const row of templates[kind]) total += bytes(row)
  }
  // Anything else that grew with the payments would have to be padded too: said in the table if so.
  const others = Object.entries(dump).flatMap(([kind, rows]) =>
    Array.isArray(rows) && !(HISTORY_KINDS as readonly string[]).includes(kind) && rows.length > (before[kind] ?? 0)
      ? [`${kind} +${rows.length - before[kind]!}`]
      : [],
  )
  return { perPayment, templates, bytesPerPayment: total / payments, otherKinds: others.length ? others.join(', ') : 'none' }
}

// Fresh random 32-byte values from a pool: getRandomValues costs microseconds a call, and padding makes millions.
const POOL_VALUES = 2048
let pool = new Uint8Array(0)
let used = 0
function hash32(): Hex {
  if (used + 32 > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(32 * POOL_VALUES))
    used = 0
  }
  let hex = '0x'
  for (let i = used; i < used + 32; i++) hex += pool[i]!.toString(16).padStart(2, '0')
  used += 32
  return hex as Hex
}

/** Padded rows take seqs far above the real ones (events and payments are keyed seq * 1000 + place) and nonces of their own. */
const PAD_NONCES = 10n ** 12n

/** The first seq padding may use: far above every seq in `dump`. */
export function padSeqBase(dump: StorageDump): number {
  return (Math.max(dump.snapshot?.seq ?? 0, ...dump.changes.map((c) => c.seq)) + 100_000) * 1000
}

/** A copy of `row` under fresh keys: its own seq, nonce and secret hash; the same shape and size. */
function freshRow(kind: HistoryKind, row: unknown, seq: number, nonce: bigint): unknown {
  switch (kind) {
    case 'payments': {
      const p = row as PaymentRecord
      return { ...p, seq, identifier: BigInt(hash32().slice(0, 16)), secrethash: hash32(), ...(p.secret ? { secret: hash32() } : {}) }
    }
    case 'events':
      return { ...(row as object), seq }
    case 'sentProofs':
      return { ...(row as SentProofRecord), balanceHash: hash32(), nonce }
    case 'sentLocks': {
      const l = row as SentLockRecord
      return { ...l, secrethash: hash32(), addedNonce: nonce, ...(l.removedNonce !== undefined ? { removedNonce: nonce + 1n } : {}) }
    }
    case 'received':
      return { ...(row as object), nonce }
  }
}

/** Payments per padding commit: large batches, as a bulk import would write them. */
export const PAD_BATCH = 2000

/** The rows of padded payments [from, to): each kind at its rate per payment, copied in turn from its templates. */
function paddedRows(shape: PaymentShape, seqBase: number, from: number, to: number): Commit {
  const commit: Record<HistoryKind, unknown[]> = { payments: [], events: [], sentProofs: [], sentLocks: [], received: [] }
  for (let j = from; j < to; j++) {
    for (const kind of HISTORY_KINDS) {
      const templates = shape.templates[kind]
      // Fractional rates (1.5 events a payment, say) come out right over the run: the count up to j, rounded down.
      const first = Math.floor(j * shape.perPayment[kind])
      const count = Math.floor((j + 1) * shape.perPayment[kind]) - first
      for (let t = 0; t < count; t++)
        commit[kind].push(freshRow(kind, templates[(first + t) % templates.length], seqBase + j * 1000 + t, PAD_NONCES + BigInt(j * 16 + t)))
    }
  }
  return commit as Commit
}

/**
 * Padded payments [from, to), through the Storage port in large commits. The next batch is built and handed over
 * while the last is written (the store writes one commit at a time, in order).
 */
export async function pad(
  storage: Storage,
  shape: PaymentShape,
  seqBase: number,
  from: number,
  to: number,
  progress?: (padded: number) => void,
): Promise<void> {
  let writing: Promise<void> = Promise.resolve()
  for (let start = from; start < to; start += PAD_BATCH) {
    const next = storage.commit(paddedRows(shape, seqBase, start, Math.min(to, start + PAD_BATCH)))
    next.catch(() => {}) // awaited below: an early failure must not count as unhandled meanwhile
    await writing
    writing = next
    if ((start / PAD_BATCH) % 100 === 99) progress?.(start + PAD_BATCH)
  }
  await writing
}
