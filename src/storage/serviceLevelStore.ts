import { ClassicLevel } from 'classic-level'
import { deserialize, serialize } from 'node:v8'
import { asStorageError } from './asStorageError.ts'
import { checkServiceStoreMeta, type OpenServiceStoreParameters, type ServiceKv, type ServiceStoreMeta } from './serviceStore.ts'
import { StorageLockedError } from './storage.ts'

// Node only (LevelDB): the services run headless.

export type { OpenServiceStoreParameters, ServiceStoreMeta } from './serviceStore.ts'

/** A value as a service store keeps it (v8's serialization: bigints, maps and the like as they are). */
export const encode = (value: unknown): Uint8Array => serialize(value)
export const decode = <T>(bytes: Uint8Array): T => deserialize(bytes) as T

/** A LevelDB database as a service store's engine: one process holds it, every batch written with `sync: true`. */
export function levelServiceKv(db: ClassicLevel<string, Uint8Array>): ServiceKv {
  return {
    engine: 'leveldb',
    get: (key) => db.get(key),
    entries: (prefix) => db.iterator({ gte: prefix, lt: `${prefix}\xff` }),
    commit: async (body) => {
      const after = await body({ leaseHeld: true, write: (ops) => db.batch(ops, { sync: true }) })
      after?.()
    },
    onChanges: () => {},
    close: () => db.close(),
  }
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
): Promise<{ db: ClassicLevel<string, Uint8Array>; kv: ServiceKv; loaded: S }> {
  const db = new ClassicLevel<string, Uint8Array>(location, { keyEncoding: 'utf8', valueEncoding: 'view' })
  try {
    await db.open()
  } catch (e) {
    if (causedBy(e, 'LEVEL_LOCKED')) throw new StorageLockedError(`the store ${location} is open in another process`, { cause: e })
    throw asStorageError(e, `opening ${location}`)
  }
  try {
    const kv = levelServiceKv(db)
    await checkServiceStoreMeta({ ...kv, put: (key, value) => db.put(key, value, { sync: true }) }, p, location, { encode, decode })
    return { db, kv, loaded: await p.load(kv) }
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
