import { StorageError, StorageVersionError } from './storage.ts'

// Node only: what a service store (the monitoring service's, the pathfinding service's) needs of its engine, LevelDB
// (serviceLevelStore.ts: one process) or PostgreSQL (postgres/serviceStore.ts: several instances on one database,
// docs/decisions/0077). Both hold the same keys and the same v8-serialized values.

/** A service store's reads of its engine: what it loads at open, and what it reads from disk when asked. */
export type ServiceKvRead = {
  get(key: string): Promise<Uint8Array | undefined>
  /** Every record whose key starts with `prefix`, in key order. */
  entries(prefix: string): AsyncIterable<[string, Uint8Array]>
}

/** A write of a batch, as LevelDB's `batch` takes it (and the PostgreSQL engine as rows). */
export type BatchOp = { type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string }

/** One batch's session with the engine: whether this instance may do what only the lease holder does, and the write. */
export type CommitSession = {
  /**
   * Whether this instance holds the service's lease, checked in the transaction that writes the batch (PostgreSQL:
   * nobody takes the lease over before it commits); always true on LevelDB, whose store one process holds alone.
   */
  leaseHeld: boolean
  /** Writes the batch's operations durably, in the session's transaction. */
  write(ops: BatchOp[]): Promise<void>
}

/** A change another instance made, as the engine hands it on: the key and its value, or undefined for a deletion. */
export type KvChange = { key: string; value: Uint8Array | undefined }

export type ServiceKv = ServiceKvRead & {
  readonly engine: 'leveldb' | 'postgres'
  /**
   * Runs one batch: `body` runs the steps (against a memory caught up with every other instance's writes first) and
   * writes; the function it returns runs once the batch is durable, before anything else touches the memory.
   */
  commit(body: (session: CommitSession) => Promise<(() => void) | undefined>): Promise<void>
  /** Tells `listener` what other instances wrote (never on LevelDB), in the order they wrote it. */
  onChanges(listener: (changes: KvChange[]) => void): void
  close(): Promise<void>
}

/** What a service store's `meta` record holds: its schema, then whose store it is. */
export type ServiceStoreMeta = { schema: number } & Record<string, string | number>

export type OpenServiceStoreParameters<M extends ServiceStoreMeta, S> = {
  /** The meta record of a new store: this code's schema and whose store it is (addresses in lower case). */
  meta: M
  /** How an error names each field of whose store it is, in order: { chainId: 'chain', ... }. */
  owner: { [K in Exclude<keyof M, 'schema'>]: string }
  /** Reads what the store keeps in memory; a failure closes the database. */
  load(kv: ServiceKvRead): Promise<S>
}

/**
 * The `meta` check both engines make at open: the meta of a new store is written; StorageError when it is another
 * chain's, contract's or key's, StorageVersionError when a newer Sluice wrote it; an older schema takes this code's
 * number (keeping an older Sluice out).
 */
export async function checkServiceStoreMeta<M extends ServiceStoreMeta>(
  kv: ServiceKvRead & { put(key: string, value: Uint8Array): Promise<void> },
  p: Pick<OpenServiceStoreParameters<M, unknown>, 'meta' | 'owner'>,
  where: string,
  codec: { encode(value: unknown): Uint8Array; decode<T>(bytes: Uint8Array): T },
): Promise<void> {
  const expected = p.meta
  const metaBytes = await kv.get('meta')
  if (metaBytes === undefined) return kv.put('meta', codec.encode(expected))
  const meta = codec.decode<M>(metaBytes)
  if (meta.schema > expected.schema) throw new StorageVersionError(`the store ${where} has schema ${meta.schema}, newer than this code's ${expected.schema}`)
  const fields = Object.entries(p.owner) as [keyof M, string][]
  if (fields.some(([field]) => meta[field] !== expected[field]))
    throw new StorageError(`the store ${where} belongs to ${fields.map(([field, name]) => `${name} ${String(meta[field])}`).join(', ')}`)
  if (meta.schema < expected.schema) await kv.put('meta', codec.encode({ ...meta, schema: expected.schema }))
}
