/**
 * A token bucket per key (a client's IP address, an owner's address): `perMinute` tokens a minute, at most `burst`
 * saved up. Pure but for the clock it is given. Keys idle long enough to be full again are forgotten, and beyond
 * `maxKeys` the least recently used go, so no stream of new keys grows it without bound (a forgotten key starts
 * full again: the bound on memory wins over the exactness of the limit).
 */
export type RateLimiter = {
  /** 0 when `key` may go now (a token is taken); otherwise the seconds until it may. */
  take(key: string): number
  /** How many keys it remembers. */
  readonly size: number
}

export function rateLimiter({
  perMinute,
  burst,
  maxKeys = 100_000,
  now = () => Date.now(),
}: {
  perMinute: number
  burst: number
  maxKeys?: number
  now?: () => number
}): RateLimiter {
  const perMs = perMinute / 60_000
  const buckets = new Map<string, { tokens: number; at: number }>()
  let sweptAt = now()
  const sweep = (t: number) => {
    for (const [key, b] of buckets) if (b.tokens + (t - b.at) * perMs >= burst) buckets.delete(key)
    sweptAt = t
  }
  return {
    get size() {
      return buckets.size
    },
    take(key) {
      const t = now()
      // Every minute, or when full: drop the keys whose buckets have refilled (they would start full anyway).
      if (t - sweptAt > 60_000 || buckets.size >= maxKeys) sweep(t)
      const b = buckets.get(key)
      let tokens = b ? Math.min(burst, b.tokens + (t - b.at) * perMs) : burst
      if (b)
        buckets.delete(key) // re-inserted below: the Map's order is the order of use
      else if (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value!)
      if (tokens >= 1) {
        tokens -= 1
        buckets.set(key, { tokens, at: t })
        return 0
      }
      buckets.set(key, { tokens, at: t })
      return Math.ceil((1 - tokens) / perMs / 1000)
    },
  }
}
