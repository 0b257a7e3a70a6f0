import { RecentMap } from '../transport/recentMap.ts'

/** What one peer, and everyone together, may ask of the service (docs/decisions/0031). */
export type Limits = {
  /** A wire line of more characters is refused unread. A RequestMonitoring is about 1,000. */
  maxLineLength: number
  /** Each peer's bucket: this many requests at once... */
  perPeerBurst: number
  /** ...refilled at this many per second. */
  perPeerPerSecond: number
  /** Channels one requester may have the service watch at once. */
  maxChannelsPerRequester: number
  /** Requests being checked at once, all peers together; beyond it a request is refused (`overloaded`). */
  maxInFlight: number
}

export const defaultLimits: Limits = {
  maxLineLength: 2_048,
  perPeerBurst: 200,
  perPeerPerSecond: 50,
  maxChannelsPerRequester: 1_000,
  maxInFlight: 1_024,
}

type Bucket = { tokens: number; at: number }

/**
 * A token bucket per peer: `burst` requests at once, then `perSecond`. A peer that sends more is refused before
 * anything costly (no JSON parsing, no signature recovery). Remembers the last 100,000 peers: a peer forgotten starts
 * with a full bucket, which a flood of new identities gains nothing from, since every line still counts against
 * `maxInFlight`.
 */
export class PeerRateLimiter {
  private readonly buckets = new RecentMap<string, Bucket>(100_000)

  constructor(
    private readonly burst: number,
    private readonly perSecond: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one token of `peer`'s bucket; false when it is empty. */
  take(peer: string): boolean {
    const t = this.now()
    const key = peer.toLowerCase()
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: t }
    const tokens = Math.min(this.burst, bucket.tokens + ((t - bucket.at) / 1000) * this.perSecond)
    const allowed = tokens >= 1
    this.buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: t })
    return allowed
  }
}
