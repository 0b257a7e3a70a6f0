import { ClassicLevel } from 'classic-level'
import { deserialize, serialize } from 'node:v8'
import { asStorageError } from './asStorageError.ts'
import { StorageError, StorageLockedError, StorageVersionError } from './storage.ts'

// Node only (LevelDB): the services run headless.

/** A value as a service store keeps it (v8's serialization: bigints, maps and the like as they are). */
export const encode = (value: unknown): Uint8Array => serialize(value)
export const decode = <T>(bytes: Uint8Array): T => deserialize(bytes) as T

/** What a service store's `meta` record holds: its schema, then whose store it is. */
export type ServiceStoreMeta = { schema: number } & Record<string, string | number>

export type OpenServiceStoreParameters<M extends ServiceStoreMeta, S> = {
  /** The meta record of a new store: this code's schema and whose store it is (addresses in lower case). */
  meta: M
  /** How an error names each field of whose store it is, in order: { chainId: 'chain', ... }. */
  owner: { [K in Exclude<keyof M, 'schema'>]: string }
  /** Reads what the store keeps in memory; a failure closes the database. */
  load(db: ClassicLevel<string, Uint8Array>): Promise<S>
}

/**
 * Opens (or creates) a service's LevelDB store at `location` (the monitoring service's, the pathfinding service's):
 * StorageLockedError when another process has it, StorageError when it is another chain's, contract's or key's,
 * StorageVersionError when a newer Sluice wrote it. An older schema takes this code's number (keeping an older Sluice
 * out): a schema that needs its records converted does that in `load`.
 */
export async function openServiceStore<M extends ServiceStoreMeta, S>(
  location: string,
  p: OpenServiceStoreParameters<M, S>,
): Promise<{ db: ClassicLevel<string, Uint8Array>; loaded: S }> {
  const db = new ClassicLevel<string, Uint8Array>(location, { keyEncoding: 'utf8', valueEncoding: 'view' })
  try {
    await db.open()
  } catch (e) {
    if (causedBy(e, 'LEVEL_LOCKED')) throw new StorageLockedError(`the store ${location} is open in another process`, { cause: e })
    throw asStorageError(e, `opening ${location}`)
  }
  try {
    const expected = p.meta
    const metaBytes = await db.get('meta')
    if (metaBytes === undefined) await db.put('meta', encode(expected), { sync: true })
    else {
      const meta = decode<M>(metaBytes)
      if (meta.schema > expected.schema)
        throw new StorageVersionError(`the store ${location} has schema ${meta.schema}, newer than this code's ${expected.schema}`)
      const fields = Object.entries(p.owner) as [keyof M, string][]
      if (fields.some(([field]) => meta[field] !== expected[field]))
        throw new StorageError(`the store ${location} belongs to ${fields.map(([field, name]) => `${name} ${String(meta[field])}`).join(', ')}`)
      if (meta.schema < expected.schema) await db.put('meta', encode({ ...meta, schema: expected.schema }), { sync: true })
    }
    return { db, loaded: await p.load(db) }
  } catch (e) {
    await db.close().catch(() => {})
    throw asStorageError(e, `opening ${location}`)
  }
}

/** Whether `code` is the code of `error` or of one of its causes (classic-level wraps LEVEL_LOCKED). */
function causedBy(error: unknown, code: string): boolean {
  for (let e = error; e instanceof Error; e = e.cause) if ((e as { code?: unknown }).code === code) return true
  return false
}
