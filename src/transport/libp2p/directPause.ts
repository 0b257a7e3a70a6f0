import { retryDelay, type Backoff } from '../backoff.ts'

/**
 * When each peer's direct path may be tried again, for both kinds (directPaths.ts over WebSockets,
 * directConnections.ts over WebRTC): after a failed dial or a lost connection, only once a pause is over that
 * doubles with each (backoff.ts) up to its maximum; a connection up, or the peer's new session or addresses, clears
 * it. A peer no path reaches costs one try now and then, not one per message.
 */
export class DirectPause {
  readonly #backoff: Backoff
  readonly #now: () => number
  readonly #peers = new Map<string, { failures: number; notBefore: number; failedAt?: number }>()
  readonly #oneFailureMs: number

  /**
   * `oneFailureMs`: failures of a peer this close together are one (counted once): a WebRTC connection that closes as
   * it opens ends its dial too, and the two are one failure, not a doubled pause. Real failures in a row are a pause
   * apart, longer than this.
   */
  constructor(backoff: Backoff, now: () => number = Date.now, options: { oneFailureMs?: number } = {}) {
    this.#backoff = backoff
    this.#now = now
    this.#oneFailureMs = options.oneFailureMs ?? 0
  }

  /** Milliseconds until the peer may be dialled directly again; 0: now. */
  waitMs(peer: string): number {
    return Math.max(0, (this.#peers.get(peer)?.notBefore ?? 0) - this.#now())
  }

  /** A dial failed, or the last connection was lost: the pause that starts now (ms), longer each time. */
  failed(peer: string): number {
    const state: { failures: number; notBefore: number; failedAt?: number } = this.#peers.get(peer) ?? { failures: 0, notBefore: 0 }
    const now = this.#now()
    if (state.failedAt !== undefined && now - state.failedAt < this.#oneFailureMs) return retryDelay(this.#backoff, state.failures)
    state.failedAt = now
    state.failures++
    const pause = retryDelay(this.#backoff, state.failures)
    // A pause under way is never shortened.
    state.notBefore = Math.max(state.notBefore, now + pause)
    this.#peers.set(peer, state)
    return pause
  }

  /** A pause of `ms` that is no failure (libp2p took our dial into another one, which went through a relay). */
  hold(peer: string, ms: number): void {
    const state = this.#peers.get(peer) ?? { failures: 0, notBefore: 0 }
    state.notBefore = Math.max(state.notBefore, this.#now() + ms)
    this.#peers.set(peer, state)
  }

  /** A connection is up, or the peer is new again: no pause, and the next failure pauses the shortest. */
  clear(peer: string): void {
    this.#peers.delete(peer)
  }

  clearAll(): void {
    this.#peers.clear()
  }
}
