/**
 * When the node's API has been quiet: no request in flight, and none answered for a while. The worker's heavy
 * background work (loading and starting libp2p holds its only thread for about 250 ms) waits for that, so the
 * page's first requests are not queued behind it (docs/decisions/0024).
 */
export type RequestActivity = {
  /** Runs `answer`, counting it as a request in flight until it settles. */
  track<T>(answer: () => Promise<T>): Promise<T>
  /**
   * Resolves once a request has been answered and none has been in flight since for `ms`. Not before the first
   * answer: the node is ready before its page asks anything, and work that starts in that gap holds the first
   * request (the caller bounds the wait).
   */
  quiet(ms: number): Promise<void>
}

export function createRequestActivity(now: () => number = Date.now): RequestActivity {
  let inFlight = 0
  let last: number | undefined
  /** The waiters' checks, run at each answer: no timer runs while no answer has come or one is in flight. */
  const waiting = new Set<() => void>()
  return {
    async track(answer) {
      inFlight++
      try {
        return await answer()
      } finally {
        inFlight--
        last = now()
        for (const check of waiting) check()
      }
    },
    quiet(ms) {
      return new Promise((resolve) => {
        let timer: ReturnType<typeof setTimeout> | undefined
        const check = () => {
          clearTimeout(timer)
          if (inFlight > 0 || last === undefined) return
          const left = last + ms - now()
          if (left > 0) timer = setTimeout(check, left)
          else {
            waiting.delete(check)
            resolve()
          }
        }
        waiting.add(check)
        check()
      })
    },
  }
}
