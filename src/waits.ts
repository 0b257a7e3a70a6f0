/**
 * Waiting in a shell that must be able to stop: a pause that ends early when its signal aborts, and a promise raced
 * against a deadline. No imports: the chain layer, the runtime and the page's module share them.
 */

/** Resolves after `ms`, or as soon as `signal` aborts (check it after: the pause was cut short). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done)
  })
}

/**
 * `work`, or a rejection with `timedOut()` once `ms` have passed, or with `aborted()` once `signal` aborts. The work
 * itself goes on, unheard: only the caller stops waiting.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, timedOut: () => Error, signal?: AbortSignal, aborted?: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => done(() => reject(aborted?.() ?? timedOut()))
    const timer = setTimeout(() => done(() => reject(timedOut())), Math.max(0, ms))
    signal?.addEventListener('abort', onAbort)
    const done = (settle: () => void) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      settle()
    }
    work.then(
      (value) => done(() => resolve(value)),
      (error: unknown) => done(() => reject(error)),
    )
  })
}
