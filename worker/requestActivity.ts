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
  return {
    async track(answer) {
      inFlight++
      try {
        return await answer()
      } finally {
        inFlight--
        last = now()
      }
    },
    quiet(ms) {
      return new Promise((resolve) => {
        const check = () => {
          const left = inFlight > 0 || last === undefined ? ms : last + ms - now()
          if (left <= 0) resolve()
          else setTimeout(check, left)
        }
        check()
      })
    },
  }
}
