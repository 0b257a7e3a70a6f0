/**
 * When the node's API has been quiet: no request in flight, and none answered for a while. The worker's heavy
 * background work (loading and starting libp2p holds its only thread for about 250 ms) waits for that, so the
 * page's first requests are not queued behind it (docs/decisions/0024).
 */
export type RequestActivity = {
  /** Runs `answer`, counting it as a request in flight until it settles. */
  track<T>(answer: () => Promise<T>): Promise<T>
  /** Resolves once no request has been in flight for `ms` (counted from creation when there was none yet). */
  quiet(ms: number): Promise<void>
}

export function createRequestActivity(now: () => number = Date.now): RequestActivity {
  let inFlight = 0
  let last = now()
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
          const left = inFlight > 0 ? ms : last + ms - now()
          if (left <= 0) resolve()
          else setTimeout(check, left)
        }
        check()
      })
    },
  }
}
