import { asStorageError } from './asStorageError.ts'
import { StorageLockedError } from './storage.ts'

/**
 * Takes the exclusive Web Lock `name` if it is free, and holds it until the returned release is called. It is
 * what keeps a second tab or worker of the same origin from opening the same node's store (IndexedDB itself
 * lets any number of connections write). Where there are no Web Locks (Node), there is nothing to take.
 */
export async function takeWebLock(name: string): Promise<() => void> {
  const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks
  if (!locks) return () => {}
  return new Promise((resolve, reject) => {
    locks
      .request(name, { mode: 'exclusive', ifAvailable: true }, (lock) => {
        if (lock === null) {
          reject(new StorageLockedError(`the store ${name} is open in another tab or worker`))
          return
        }
        // The lock lasts as long as this promise is pending.
        return new Promise<void>((release) => resolve(() => release()))
      })
      .catch((e: unknown) => reject(asStorageError(e, `taking the Web Lock ${name}`)))
  })
}
