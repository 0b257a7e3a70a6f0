import { StorageError } from './storage.ts'

/** Engine errors (DOMException, LevelDB, clone errors) become a StorageError with the original as cause. */
export function asStorageError(error: unknown, what: string): StorageError {
  if (error instanceof StorageError) return error
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return new StorageError(`${what} failed: ${message}`, { cause: error })
}
