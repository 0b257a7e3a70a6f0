import { RateLimiter } from '@libp2p/utils'

/**
 * So much per key (a peer, an IP address) in each window of time: what a relay and a node allow one peer or one
 * address before they hold it back or drop what it sends (docs/decisions/0064). libp2p's own fixed-window counter
 * (@libp2p/utils' RateLimiter, what its connection manager counts new connections per address with), asked how
 * long a key must wait rather than made to throw. Browser-safe.
 */
export class RateLimit {
  readonly #limiter: RateLimiter | undefined
  readonly #windowMs: number

  /** `amount` per `seconds` for each key (a whole number of seconds); Infinity for no limit. */
  constructor(
    readonly amount: number,
    seconds = 1,
  ) {
    this.#limiter = Number.isFinite(amount) ? new RateLimiter({ points: amount, duration: seconds, keyPrefix: '' }) : undefined
    this.#windowMs = seconds * 1000
  }

  /**
   * Counts `amount` against `key`; how many milliseconds the key should now wait: 0 while its window holds it, else
   * until the window ends, and as many windows more as what went over would fill (a 4 MiB frame at 1 MiB a second
   * waits about 3 s, not until the end of the second).
   */
  take(key: string, amount = 1): number {
    if (!this.#limiter) return 0
    try {
      this.#limiter.consume(key, amount)
      return 0
    } catch (error) {
      const { msBeforeNext, consumedPoints } = error as { msBeforeNext?: number; consumedPoints?: number }
      const over = Math.max(0, (consumedPoints ?? 0) - this.amount)
      return Math.max(1, msBeforeNext ?? 0) + Math.ceil((over / this.amount) * this.#windowMs)
    }
  }

  /** Whether `key` may have one more now (counted if so): for what is dropped, not held back. */
  allows(key: string): boolean {
    return this.take(key) === 0
  }
}
