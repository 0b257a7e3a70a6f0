import { SluiceError } from '../../../errors.ts'
import type { NodeState } from '../../../protocol/state/types.ts'
import { jsonParse, jsonStringify } from '../../../storage/json.ts'
import type { OutboxRecord, SentLockRecord, SentProofRecord, StorageDump } from '../../../storage/storage.ts'

/**
 * What a backup copy holds (docs/decisions/0034): a StorageDump cut down to what the node needs to recover its funds,
 * which the store's own import then restores. The meta; a snapshot of the state (channels and both ends' latest
 * proofs, pending locks with their secrets, the payments, transfers and secrets under way, the nonces); the outbox it
 * was still sending (resent after the restore: the same signed bytes); the transactions under way; and, of the
 * history of the proofs we signed (decision 0014), the latest of each channel with its pending locks, taken from the
 * state: older ones are left out (`ourHistoryFrom`), so a copy does not grow with the payments and no push reads the
 * history. No payment history, events, chain events or received messages. JSON with tagged bigints, gzipped.
 */
export const PAYLOAD_FORMAT = 'sluice-recovery/1'

export type RecoveryPayload = {
  format: typeof PAYLOAD_FORMAT
  dump: StorageDump
  /** By channel key: the nonce from which our sent proofs are all in the copy (older ones were left out). */
  ourHistoryFrom: Record<string, bigint>
}

/** A consistent point of the running node: its state at `seq` and what delivery was still sending then. */
export type RecoveryPoint = { seq: number; state: NodeState; outbox: OutboxRecord[] }

/** The copy's plaintext must leave room in the server's 1 MiB for the cipher's 28 bytes. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024 - 1024

/** A copy that cannot be read as this format: another program's payload, or one of a newer Sluice. */
export class RecoveryPayloadError extends SluiceError {
  override name = 'RecoveryPayloadError' as const
  override readonly code = 'BACKUP_PAYLOAD_INVALID' as const
}

/** A state too large for one copy: it is not pushed. */
export class RecoveryTooLargeError extends SluiceError {
  override name = 'RecoveryTooLargeError' as const
  override readonly code = 'BACKUP_TOO_LARGE' as const
}

/** The payload of the copy of `point`, with the meta and transactions `stored` holds (exportDump({recovery: true})). */
export async function buildPayload(point: RecoveryPoint, stored: Pick<StorageDump, 'meta' | 'transactions'>): Promise<Uint8Array> {
  const payload: RecoveryPayload = {
    format: PAYLOAD_FORMAT,
    ...latestProofs(point.state),
    dump: {
      format: 'sluice-dump',
      // The state has applied every chain event up to its block: the restored node syncs on from there.
      meta: { ...stored.meta, syncedBlock: point.state.blockNumber },
      snapshot: { seq: point.seq, state: point.state },
      changes: [],
      events: [],
      payments: [],
      chainEvents: [],
      outbox: point.outbox,
      transactions: stored.transactions,
      ...latestHistory(point.state),
      received: [],
    },
  }
  const bytes = await gzip(new TextEncoder().encode(jsonStringify(payload)))
  if (bytes.length > MAX_PAYLOAD_BYTES)
    throw new RecoveryTooLargeError(`the node's state takes ${bytes.length} bytes, more than a copy holds (${MAX_PAYLOAD_BYTES})`)
  return bytes
}

/** Each channel's latest proof of ours (in the state) is where its history in the copy starts. */
function latestProofs(state: NodeState): { ourHistoryFrom: Record<string, bigint> } {
  const ourHistoryFrom: Record<string, bigint> = {}
  for (const [key, channel] of Object.entries(state.channels)) if (channel.our.balanceProof) ourHistoryFrom[key] = channel.our.balanceProof.nonce
  return { ourHistoryFrom }
}

/** The sent-proof history a restore starts with: each channel's latest proof of ours and the locks pending in it. */
function latestHistory(state: NodeState): { sentProofs: SentProofRecord[]; sentLocks: SentLockRecord[] } {
  const sentProofs: SentProofRecord[] = []
  const sentLocks: SentLockRecord[] = []
  for (const [channelKey, { our }] of Object.entries(state.channels)) {
    const p = our.balanceProof
    if (!p) continue
    sentProofs.push({
      channelKey,
      balanceHash: p.balanceHash,
      nonce: p.nonce,
      transferredAmount: p.transferredAmount,
      lockedAmount: p.lockedAmount,
      locksroot: p.locksroot,
    })
    for (const l of our.locks)
      sentLocks.push({ channelKey, secrethash: l.secrethash, expiration: l.expiration, amount: l.amount, addedNonce: l.nonce ?? p.nonce })
  }
  return { sentProofs, sentLocks }
}

/** Reads a copy's payload: its dump is checked again by the store's import (owner, schema, rows). */
export async function readPayload(bytes: Uint8Array): Promise<RecoveryPayload> {
  let value: unknown
  try {
    value = jsonParse(new TextDecoder('utf-8', { fatal: true }).decode(await gunzip(bytes)))
  } catch (cause) {
    throw new RecoveryPayloadError('the copy does not hold a Sluice recovery payload (not gzipped JSON)', { cause })
  }
  const payload = value as Partial<RecoveryPayload> | null
  if (!payload || typeof payload !== 'object' || payload.format !== PAYLOAD_FORMAT)
    throw new RecoveryPayloadError(`the copy's payload is not of format ${PAYLOAD_FORMAT}`)
  if (!payload.dump || typeof payload.dump !== 'object' || !payload.dump.snapshot) throw new RecoveryPayloadError("the copy's payload holds no snapshot")
  const from = payload.ourHistoryFrom ?? {}
  if (typeof from !== 'object' || !Object.values(from).every((n) => typeof n === 'bigint'))
    throw new RecoveryPayloadError("the copy's ourHistoryFrom is not a map of nonces")
  return { format: PAYLOAD_FORMAT, dump: payload.dump, ourHistoryFrom: from }
}

/**
 * The dump a restore imports: the copy's, with one change after its snapshot that marks the state restored (every
 * channel then waits for its partner's sync, and so does every channel of ours the sync finds opened up to
 * `openedUpTo`, the chain's head at the restore: one the copy did not know). In the dump itself, so a crash right
 * after the import keeps it.
 */
export function restoreDump(payload: RecoveryPayload, version: bigint, openedUpTo: bigint): StorageDump {
  const { dump } = payload
  const seq = dump.snapshot!.seq + 1
  return {
    ...dump,
    changes: [{ seq, time: dump.meta.createdAt, change: { type: 'restored', version, ourHistoryFrom: payload.ourHistoryFrom, openedUpTo } }],
  }
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  return pipe(bytes, new CompressionStream('gzip'))
}

async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  return pipe(bytes, new DecompressionStream('gzip'))
}

async function pipe(bytes: Uint8Array, through: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(through)
  return new Uint8Array(await new Response(stream).arrayBuffer())
}
