import { SluiceError } from '../../../errors.ts'
import type { NodeState } from '../../../protocol/state/types.ts'
import { jsonParse, jsonStringify } from '../../../storage/json.ts'
import type { OutboxRecord, SentLockRecord, SentProofRecord, StorageDump } from '../../../storage/storage.ts'

/**
 * What a backup copy holds (docs/decisions/0034): a StorageDump cut down to what the node needs to recover its funds,
 * which the store's own import then restores. The meta; a snapshot of the state (channels and both ends' latest
 * proofs, pending locks with their secrets, the payments, transfers and secrets under way, the nonces); the outbox it
 * was still sending (resent after the restore: the same signed bytes); the transactions under way; and the history
 * of the proofs we signed (decision 0014) for the channels still in the state, the newest first up to a bound. No
 * payment history, events, chain events or received messages. JSON with tagged bigints, gzipped.
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

/** The copy's plaintext must leave room in the server's 1 MiB for the cipher's 28 bytes: the history is cut to fit this. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024 - 1024

/** The proofs we signed kept per channel at first; halved until the copy fits. */
const PROOFS_PER_CHANNEL = 2048

/** A copy that cannot be read as this format: another program's payload, or one of a newer Sluice. */
export class RecoveryPayloadError extends SluiceError {
  override name = 'RecoveryPayloadError' as const
  override readonly code = 'BACKUP_PAYLOAD_INVALID' as const
}

/** A state too large for one copy even with no history: it is not pushed. */
export class RecoveryTooLargeError extends SluiceError {
  override name = 'RecoveryTooLargeError' as const
  override readonly code = 'BACKUP_TOO_LARGE' as const
}

/**
 * The payload of the copy of `point`, with the meta, transactions and history of `stored` (read from the store after
 * the point was taken, so its history covers every proof the state holds). The version is the point's seq.
 */
export async function buildPayload(point: RecoveryPoint, stored: StorageDump): Promise<Uint8Array> {
  const channels = new Set(Object.keys(point.state.channels))
  const proofs = stored.sentProofs?.filter((p) => channels.has(p.channelKey)) ?? []
  const locks = stored.sentLocks?.filter((l) => channels.has(l.channelKey)) ?? []
  for (let perChannel = PROOFS_PER_CHANNEL; ; perChannel = Math.floor(perChannel / 2)) {
    const { sentProofs, sentLocks, ourHistoryFrom } = boundHistory(proofs, locks, perChannel)
    const payload: RecoveryPayload = {
      format: PAYLOAD_FORMAT,
      ourHistoryFrom,
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
        sentProofs,
        sentLocks,
        received: [],
      },
    }
    const bytes = await gzip(new TextEncoder().encode(jsonStringify(payload)))
    if (bytes.length <= MAX_PAYLOAD_BYTES) return bytes
    if (perChannel === 0) throw new RecoveryTooLargeError(`the node's state takes ${bytes.length} bytes, more than a copy holds (${MAX_PAYLOAD_BYTES})`)
  }
}

/** The newest `perChannel` proofs of each channel, the locks alive at any of them, and where each channel's history starts. */
function boundHistory(proofs: SentProofRecord[], locks: SentLockRecord[], perChannel: number) {
  const byChannel = new Map<string, SentProofRecord[]>()
  for (const p of proofs) byChannel.set(p.channelKey, [...(byChannel.get(p.channelKey) ?? []), p])
  const sentProofs: SentProofRecord[] = []
  const ourHistoryFrom: Record<string, bigint> = {}
  const from = new Map<string, bigint>()
  for (const [key, list] of byChannel) {
    const kept = list.sort((a, b) => (a.nonce < b.nonce ? 1 : a.nonce > b.nonce ? -1 : 0)).slice(0, perChannel)
    sentProofs.push(...kept)
    if (kept.length < list.length) {
      const oldest = kept.at(-1)?.nonce ?? list[0]!.nonce + 1n
      ourHistoryFrom[key] = oldest
      from.set(key, oldest)
    }
  }
  // A lock removed before the first proof kept is in none of them.
  const sentLocks = locks.filter((l) => {
    const start = from.get(l.channelKey)
    return start === undefined || l.removedNonce === undefined || l.removedNonce > start
  })
  return { sentProofs, sentLocks, ourHistoryFrom }
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
