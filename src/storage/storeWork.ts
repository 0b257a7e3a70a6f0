import { asStorageError } from './asStorageError.ts'

/**
 * A store's work in flight: its writes, run one at a time in the order they were asked, and its reads. Closing
 * waits for both, so what was asked before the close finishes rather than fail half-way.
 */
export class StoreWork {
  #writes: Promise<unknown> = Promise.resolve()
  readonly #reads = new Set<Promise<unknown>>()

  /** Runs `work` once every write asked before it has ended; a failure comes out as a StorageError about `what`. */
  write<T>(work: () => Promise<T>, what: string): Promise<T> {
    const result = this.#writes.then(work)
    this.#writes = result.catch(() => {})
    return result.catch((e) => {
      throw asStorageError(e, what)
    })
  }

  /** Follows a read until it ends; a failure comes out as a StorageError about `what`. */
  async read<T>(work: Promise<T>, what: string): Promise<T> {
    this.#reads.add(work)
    try {
      return await work
    } catch (e) {
      throw asStorageError(e, what)
    } finally {
      this.#reads.delete(work)
    }
  }

  /** Resolves once every write asked and every read in flight has ended. */
  async drain(): Promise<void> {
    await this.#writes
    await Promise.allSettled([...this.#reads])
  }
}
