import type { Hex } from 'viem'
import { fetchBackup } from '../../../backup/client.ts'
import { backupKey } from '../../../backup/key.ts'
import { open } from '../../../backup/seal.ts'
import type { Secp256k1Engine } from '../../../protocol/secp256k1.ts'
import type { Storage } from '../../../storage/storage.ts'
import { readPayload, RecoveryPayloadError, restoreDump } from './payload.ts'

/** What a start restored from the backup server: the copy's version (the seq of the state it held). */
export type Restored = { version: bigint; bytes: number; at: number }

/**
 * Restores the newest copy on the backup server into an empty store (docs/decisions/0034): fetched with the node's
 * key (only the owner may fetch), its signature and cipher checked (an older copy cannot pass for a newer version,
 * nor another owner's for ours), its payload read and imported by the store, which checks the owner and every row
 * again. Undefined when the server holds no copy of this node. Throws the backup client's coded errors (the server
 * unreachable, silent, or answering something else), RecoveryPayloadError, or the store's DumpRejectedError.
 */
export async function restoreFromBackup(
  storage: Storage,
  p: { url: string; key: Hex; curve: Secp256k1Engine; openedUpTo: bigint; timeoutMs?: number; now?: () => number },
): Promise<Restored | undefined> {
  const key = await backupKey(p.curve, p.key)
  const envelope = await fetchBackup(p.url, key, p.timeoutMs === undefined ? {} : { timeoutMs: p.timeoutMs })
  if (!envelope) return undefined
  const { version, payload } = await open(key, envelope)
  const copy = await readPayload(payload)
  // The version is the seq of the state the copy holds: bound to it by the signature, checked against it here.
  if (BigInt(copy.dump.snapshot!.seq) !== version)
    throw new RecoveryPayloadError(`the copy of version ${version} holds the state of seq ${copy.dump.snapshot!.seq}`)
  await storage.importDump(restoreDump(copy, version, p.openedUpTo))
  return { version, bytes: payload.length, at: (p.now ?? Date.now)() }
}
