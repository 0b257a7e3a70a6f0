import { sameIdentity } from './identity.ts'
import { STORAGE_SCHEMA_VERSION, StorageError, type Meta, type StorageIdentity } from './storage.ts'

/** The meta row a new store starts with: written by the first migration, so every store has one. */
export function initialMeta(identity: StorageIdentity): Meta {
  return {
    chainId: identity.chainId,
    registry: identity.registry,
    address: identity.address,
    schemaVersion: STORAGE_SCHEMA_VERSION,
    syncedBlock: 0n,
    createdAt: Date.now(),
  }
}

/** Refuses a meta patch that would move the store to another node or schema: those are fixed at creation. */
export function checkMetaPatch(patch: Partial<Meta>, identity: StorageIdentity): void {
  const merged = { ...identity, ...patch }
  if (!sameIdentity(merged, identity)) throw new StorageError('a commit cannot change the identity (chain id, registry, address) of the store')
  if (patch.schemaVersion !== undefined && patch.schemaVersion !== STORAGE_SCHEMA_VERSION) {
    throw new StorageError('a commit cannot change the schema version (migrations do)')
  }
  if (patch.syncedBlock !== undefined && (typeof patch.syncedBlock !== 'bigint' || patch.syncedBlock < 0n)) {
    throw new StorageError(`invalid syncedBlock: ${String(patch.syncedBlock)}`)
  }
  if (patch.recentBlocks !== undefined && !(Array.isArray(patch.recentBlocks) && patch.recentBlocks.every(isBlockRef))) {
    throw new StorageError('invalid recentBlocks: a list of { number, hash } is expected')
  }
}

const isBlockRef = (b: unknown): boolean =>
  typeof b === 'object' && b !== null && typeof (b as { number?: unknown }).number === 'bigint' && typeof (b as { hash?: unknown }).hash === 'string'

/** The stored meta with a checked patch applied; the identity keeps the spelling it was created with. */
export function mergeMeta(current: Meta, patch: Partial<Meta> | undefined): Meta {
  if (!patch) return current
  return { ...current, ...patch, chainId: current.chainId, registry: current.registry, address: current.address, schemaVersion: current.schemaVersion }
}
