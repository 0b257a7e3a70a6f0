// Node only: the backup server's store (LevelDB). Nothing the browser loads imports it.
import { ClassicLevel } from 'classic-level'
import type { Address, Hex } from 'viem'
import { SluiceError } from '../../errors.ts'

/**
 * Where `sluice backup-server` keeps the newest copy of each address (docs/decisions/0032-off-browser-backup.md):
 * LevelDB, as the headless node, under `<data-dir>/copies`. Per address two keys written in one batch with
 * `sync: true`, so a copy is on disk (fsync) before the write resolves and before anyone is told it is kept, and a
 * kill -9 at any point leaves either the old copy or the new one, never a mix:
 *
 *   c!<address>  the copy's JSON, byte for byte as served
 *   m!<address>  {"version", "bytes", "hash"}: what a push is compared with (hash = keccak256 of the ciphertext)
 *
 * Only the totals (copies, bytes) stay in memory, counted from the `m!` records at open. LevelDB's LOCK file keeps
 * a second server off the same directory.
 */
export type CopyRecord = { version: bigint; bytes: number; hash: Hex }

/** The store failed (the disk, the directory): nothing was acknowledged. */
export class BackupStoreError extends SluiceError {
  override name = 'BackupStoreError' as const
  override readonly code = 'BACKUP_STORE' as const
}

export type BackupStore = {
  /** Where it lives. */
  readonly location: string
  /** How many addresses have a copy. */
  readonly copies: number
  /** The sum of the copies' JSON sizes. */
  readonly bytes: number
  record(address: Address): Promise<CopyRecord | undefined>
  /** The copy's JSON, as it was stored. */
  read(address: Address): Promise<string | undefined>
  /** Replaces the copy of `address`; resolves once it is durable. */
  write(address: Address, record: CopyRecord, json: string): Promise<void>
  /**
   * A store several servers share (PostgreSQL, docs/decisions/0077): `decide` sees the copy held and the bytes of
   * all copies in the transaction that writes, under the store's lock, and says whether to write (false: unchanged)
   * or throws to refuse; resolves with whether it wrote. Without it, the server's own one-at-a-time rules apply.
   */
  writeChecked?(address: Address, record: CopyRecord, json: string, decide: (held: CopyRecord | undefined, totalBytes: number) => boolean): Promise<boolean>
  close(): Promise<void>
}

type Db = ClassicLevel<string, string>
type StoredRecord = { version: string; bytes: number; hash: Hex }

const copyKey = (address: Address) => `c!${address}`
const recordKey = (address: Address) => `m!${address}`

function causeCode(error: unknown, code: string): boolean {
  for (let e = error; e instanceof Error; e = e.cause) if ((e as { code?: unknown }).code === code) return true
  return false
}

export async function openBackupStore(location: string): Promise<BackupStore> {
  const db: Db = new ClassicLevel<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' })
  try {
    await db.open()
  } catch (e) {
    if (causeCode(e, 'LEVEL_LOCKED')) throw new BackupStoreError(`${location} is open in another backup server`, { cause: e })
    throw new BackupStoreError(`cannot open ${location}: ${(e as Error).message}`, { cause: e })
  }
  let copies = 0
  let bytes = 0
  try {
    for await (const value of db.values({ gte: 'm!', lt: 'm"' })) {
      copies++
      bytes += (JSON.parse(value) as StoredRecord).bytes
    }
  } catch (e) {
    await db.close().catch(() => {})
    throw new BackupStoreError(`cannot read ${location}: ${(e as Error).message}`, { cause: e })
  }
  const failed = (what: string) => (e: unknown) => {
    throw new BackupStoreError(`${what} failed: ${(e as Error).message}`, { cause: e })
  }
  const store: BackupStore = {
    location,
    get copies() {
      return copies
    },
    get bytes() {
      return bytes
    },
    async record(address) {
      const value = await db.get(recordKey(address)).catch(failed('reading a copy record'))
      if (value === undefined) return undefined
      const stored = JSON.parse(value) as StoredRecord
      return { version: BigInt(stored.version), bytes: stored.bytes, hash: stored.hash }
    },
    async read(address) {
      return db.get(copyKey(address)).catch(failed('reading a copy'))
    },
    async write(address, record, json) {
      // Counted only once written: the caller serialises the writes of one address, so `before` is still true after.
      const before = await store.record(address)
      const stored: StoredRecord = { version: record.version.toString(), bytes: record.bytes, hash: record.hash }
      await db
        .batch(
          [
            { type: 'put', key: copyKey(address), value: json },
            { type: 'put', key: recordKey(address), value: JSON.stringify(stored) },
          ],
          { sync: true },
        )
        .catch(failed('writing a copy'))
      if (!before) copies++
      bytes += record.bytes - (before?.bytes ?? 0)
    },
    close: () => db.close(),
  }
  return store
}
