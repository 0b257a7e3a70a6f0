import { checkCommit } from './checkCommit.ts'
import { sameIdentity } from './identity.ts'
import { type Commit, DumpRejectedError, STORAGE_SCHEMA_VERSION, type Meta, type StorageDump, type StorageIdentity } from './storage.ts'
import { hasCode } from '../errors.ts'

/** How far a store's state goes: the seq of its snapshot or of its last change, whichever is later (-1: none). */
export function progressOf(snapshotSeq: number | undefined, lastChangeSeq: number | undefined): number {
  return Math.max(snapshotSeq ?? -1, lastChangeSeq ?? -1)
}

/** A dump's rows as one commit: what a store writes (and checks) when it imports the dump. */
export function commitOfDump(d: StorageDump): Commit {
  return {
    changes: d.changes,
    ...(d.snapshot ? { snapshot: d.snapshot } : {}),
    events: d.events,
    payments: d.payments,
    chainEvents: d.chainEvents,
    outbox: { put: d.outbox },
    transactions: { put: d.transactions },
    sentProofs: d.sentProofs ?? [],
    sentLocks: d.sentLocks ?? [],
    received: d.received ?? [],
    chainTransactions: { put: d.chainTransactions ?? [] },
  }
}

/** What is stored now, to compare a dump against. */
export type StoredProgress = { meta: Meta; progress: number }

/**
 * Checks that `dump` may replace the store of `identity`: well formed, same chain, registry and node, a schema
 * version this code reads, and not older than what is stored (fewer changes or an earlier synced block), so a stale
 * backup can never roll back signed balance proofs. Equal is accepted: importing the same dump twice is harmless.
 * Gives back the dump itself, or a copy with its meta at STORAGE_SCHEMA_VERSION when it was older.
 */
export function checkDump(dump: unknown, identity: StorageIdentity, stored: StoredProgress): StorageDump {
  const d = checkShape(dump)
  if (!sameIdentity(d.meta, identity)) {
    const what =
      d.meta.chainId !== identity.chainId
        ? 'chain'
        : d.meta.registry.toLowerCase() !== identity.registry.toLowerCase()
          ? 'token network registry'
          : 'node address'
    throw new DumpRejectedError(`the dump belongs to another ${what} (chain ${d.meta.chainId}, registry ${d.meta.registry}, address ${d.meta.address})`)
  }
  // An older dump is a subset of this format (version 2 added sent proofs and locks, 3 the received messages, 5 the
  // transaction journal): it comes in as this version.
  if (!Number.isInteger(d.meta.schemaVersion) || d.meta.schemaVersion < 1 || d.meta.schemaVersion > STORAGE_SCHEMA_VERSION) {
    throw new DumpRejectedError(`the dump has schema version ${d.meta.schemaVersion}; this node reads versions 1 to ${STORAGE_SCHEMA_VERSION}`)
  }
  try {
    checkCommit(commitOfDump(d), identity)
  } catch (e) {
    if (hasCode(e, 'STORAGE')) throw new DumpRejectedError(`the dump holds an invalid row: ${(e as Error).message}`, { cause: e })
    throw e
  }
  const progress = progressOf(
    d.snapshot?.seq,
    d.changes.reduce((max, c) => Math.max(max, c.seq), -1),
  )
  if (progress < stored.progress)
    throw new DumpRejectedError(`the dump is older than the stored state (it reaches seq ${progress}, the store seq ${stored.progress})`)
  if (d.meta.syncedBlock < stored.meta.syncedBlock) {
    throw new DumpRejectedError(`the dump is older than the stored state (synced to block ${d.meta.syncedBlock}, the store to ${stored.meta.syncedBlock})`)
  }
  return d.meta.schemaVersion === STORAGE_SCHEMA_VERSION ? d : { ...d, meta: { ...d.meta, schemaVersion: STORAGE_SCHEMA_VERSION } }
}

const LISTS = ['changes', 'events', 'payments', 'chainEvents', 'outbox', 'transactions'] as const
/** Absent from dumps of schema version 1 (sent proofs and locks), up to 2 (received) or up to 4 (the journal). */
const OPTIONAL_LISTS = ['sentProofs', 'sentLocks', 'received', 'chainTransactions'] as const

function checkShape(dump: unknown): StorageDump {
  if (!isObject(dump) || dump.format !== 'sluice-dump') throw new DumpRejectedError('not a Sluice dump (format is not "sluice-dump")')
  const meta = dump.meta
  if (
    !isObject(meta) ||
    typeof meta.chainId !== 'bigint' ||
    typeof meta.registry !== 'string' ||
    typeof meta.address !== 'string' ||
    typeof meta.schemaVersion !== 'number' ||
    typeof meta.syncedBlock !== 'bigint' ||
    typeof meta.createdAt !== 'number'
  ) {
    throw new DumpRejectedError('the dump has no valid meta (were its bigints decoded?)')
  }
  for (const list of LISTS) {
    const rows = dump[list]
    if (!Array.isArray(rows) || !rows.every(isObject)) throw new DumpRejectedError(`the dump's ${list} is not a list of records`)
  }
  for (const list of OPTIONAL_LISTS) {
    const rows = dump[list]
    if (rows !== undefined && (!Array.isArray(rows) || !rows.every(isObject))) throw new DumpRejectedError(`the dump's ${list} is not a list of records`)
  }
  if (dump.snapshot !== undefined && !isObject(dump.snapshot)) throw new DumpRejectedError("the dump's snapshot is not a record")
  return dump as StorageDump
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
