const settle = () => undefined

/**
 * Tasks run one at a time per key, each once the one before it under that key has settled (resolved or rejected),
 * in the order given; tasks under different keys do not wait for each other. What a peer is sent goes out in order
 * while another peer's send stalls; one channel's transactions are made one at a time. A key is forgotten once its
 * last task has settled, so the keys of a long run cost nothing. Chosen over p-queue, p-limit and async-mutex, one
 * per key, by measurement: docs/decisions/0061-one-serial-helper-per-key.md.
 */
export class SerialByKey {
  /** Per busy key, the promise that settles when its last task queued so far does; it never rejects. */
  readonly #tails = new Map<string, Promise<void>>()

  /** Runs `task` after those queued under `key` before it; its own result or failure is the caller's. */
  run<T>(key: string, task: () => T | PromiseLike<T>): Promise<T> {
    const run = (this.#tails.get(key) ?? Promise.resolve()).then(task)
    const tail = run.then(settle, settle)
    this.#tails.set(key, tail)
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key)
    })
    return run
  }

  /** How many keys have a task queued or running. */
  get busy(): number {
    return this.#tails.size
  }

  /** Settles once every task queued so far has (not those queued meanwhile). */
  idle(): Promise<void> {
    return Promise.all(this.#tails.values()).then(settle)
  }
}
