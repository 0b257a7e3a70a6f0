/** A tiny typed publish/subscribe: the runtime publishes, the API (SSE, payment waiters) and the page subscribe. */
export class EventBus<E> {
  private readonly listeners = new Set<(event: E) => void>()

  subscribe(listener: (event: E) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  publish(event: E): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event)
      } catch {
        // A subscriber's failure is its own; the node carries on.
      }
    }
  }

  /** Resolves with the first event matching `predicate`. */
  next(predicate: (event: E) => boolean, signal?: AbortSignal): Promise<E> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const onAbort = () => {
        off()
        reject(signal!.reason)
      }
      const off = this.subscribe((event) => {
        if (!predicate(event)) return
        off()
        signal?.removeEventListener('abort', onAbort)
        resolve(event)
      })
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }
}
