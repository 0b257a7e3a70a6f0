/**
 * Whether the browser keeps the origin's data (the node's key and channels) under storage pressure, asked without
 * ever holding up a start (docs/decisions/0057). `persisted()` never prompts; `persist()` may: Firefox answers it
 * only when the person answers its prompt, and a prompt nobody answers leaves it pending for ever. So the start reads
 * the first and asks the second in the background, and `persist()` asked on a gesture has a bound.
 */
import { SluiceError, withCode } from '../src/errors.ts'
import { withTimeout } from '../src/waits.ts'
import { BrowserUnsupportedError } from './browserSupport.ts'

/** How long `persisted()` may take; it answers from what the browser knows, at once in every engine we know. */
const READ_MS = 1_000
/** How long `node.persistStorage()` waits for the browser's answer (a person reading a prompt) unless told. */
const PERSIST_MS = 30_000

/** The browser answered neither `persist()` in time nor `persisted()`. */
export class PersistTimeoutError extends SluiceError {
  override name = 'PersistTimeoutError' as const
  override readonly code = 'PERSIST_TIMEOUT' as const
}

export type StoragePersistence = {
  /** true: kept; false: best effort; undefined: no answer yet (or no navigator.storage in this browser). */
  readonly persisted: boolean | undefined
  /** Asks `persist()` (on a user's gesture, which Firefox's prompt expects) and gives the answer; see host.ts. */
  persist(timeoutMs?: number): Promise<boolean>
}

/**
 * Reads `persisted()` now; with `ask`, unless the data is kept already, asks `persist()` in the background. Nothing
 * here is awaited by the start: `persisted` is undefined until an answer comes.
 */
export function storagePersistence({ ask }: { ask: boolean }): StoragePersistence {
  const storage = globalThis.navigator?.storage as Partial<StorageManager> | undefined
  let persisted: boolean | undefined
  // An answer from an older request (the start's) never takes back a later yes.
  const heard = (answer: boolean) => {
    persisted = answer || persisted === true
    return answer
  }
  const read = (): Promise<boolean> => {
    if (typeof storage?.persisted !== 'function') return Promise.reject(new BrowserUnsupportedError(['storageManager']))
    return withTimeout(
      storage.persisted(),
      READ_MS,
      // Never seen: persist() below says what did not answer.
      () => new PersistTimeoutError('persisted()'),
    )
  }
  const request = (): Promise<boolean> => storage!.persist!().then(heard)

  void read().then(
    (now) => {
      if (now || !ask) heard(now)
      else if (typeof storage?.persist === 'function') request().catch(() => {})
    },
    () => {
      if (ask && typeof storage?.persist === 'function') request().catch(() => {})
    },
  )

  return {
    get persisted() {
      return persisted
    },
    async persist(timeoutMs = PERSIST_MS) {
      if (typeof storage?.persist !== 'function') throw new BrowserUnsupportedError(['storageManager'])
      try {
        return await withTimeout(request(), timeoutMs, () => new PersistTimeoutError(`no answer to navigator.storage.persist() within ${timeoutMs} ms`))
      } catch (e) {
        // No answer in time (a prompt nobody answered: its answer still counts when it comes), or a refusal to
        // ask: what the browser says now.
        try {
          const now = await read()
          return now ? heard(now) : now
        } catch {
          const why = withCode<PersistTimeoutError>(e, 'PERSIST_TIMEOUT')?.shortMessage ?? `navigator.storage.persist() failed (${(e as Error).message})`
          throw new PersistTimeoutError(`${why}, and no answer to persisted() within ${READ_MS} ms`, { cause: e })
        }
      }
    },
  }
}
