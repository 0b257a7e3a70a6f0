/**
 * A Map that remembers only its `limit` most recently set keys: bounded memory for "have I seen this?" questions
 * about an unbounded stream (received messages, answers given).
 */
export class RecentMap<K, V> {
  readonly #entries = new Map<K, V>()
  constructor(readonly limit: number) {}

  get(key: K): V | undefined {
    return this.#entries.get(key)
  }

  set(key: K, value: V): void {
    // Re-inserting moves the key to the young end, so a key in active use is not the next one forgotten.
    this.#entries.delete(key)
    this.#entries.set(key, value)
    while (this.#entries.size > this.limit) this.#entries.delete(this.#entries.keys().next().value as K)
  }

  get size(): number {
    return this.#entries.size
  }
}
