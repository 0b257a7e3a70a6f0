import type { Address } from 'viem'
import { PeerRateLimiter } from './limits.ts'

/** What one peer, and everyone together, may send a service, whatever its lines hold. */
export type LineLimits = {
  /** A wire line of more characters is refused unread. */
  maxLineLength: number
  /** Each peer's bucket: this many lines at once... */
  perPeerBurst: number
  /** ...refilled at this many per second. */
  perPeerPerSecond: number
  /** Lines being checked at once, all peers together; beyond it a line is refused (`overloaded`). */
  maxInFlight: number
}

/** Why a line is refused before it is read. */
export type LineRefusal = { reason: 'overloaded' | 'too_large' | 'rate_limited'; detail?: string }

export type LineIntakeParameters<O> = {
  limits: LineLimits
  /** What a line comes to (`again`: a line held and taken again, whose peer was counted when it came). */
  decide(line: string, from: Address, again: boolean): Promise<O>
  /** What a line whose decision threw comes to (an internal error: a bug). */
  internalError(from: Address, error: unknown): O
  /** Counts an outcome (and acknowledges or logs it); its return is what `handle` resolves with. */
  count(from: Address, outcome: O): O
  now?: (() => number) | undefined
}

/**
 * The part of a service's intake (the monitoring service's requests, the pathfinding service's updates) that is the
 * same whatever its lines hold: each line is handled on its own, concurrently, and ends as one counted outcome, a bug
 * too, so that nothing a peer sends can throw out of it; before it is read, a line meets the limits (stopping, its
 * size, its peer's rate, the lines in flight); `stop` waits for the lines under way.
 */
export class LineIntake<O> {
  private readonly limiter: PeerRateLimiter
  private readonly inFlight = new Set<Promise<unknown>>()
  private stopped = false

  constructor(private readonly p: LineIntakeParameters<O>) {
    this.limiter = new PeerRateLimiter(p.limits.perPeerBurst, p.limits.perPeerPerSecond, p.now)
  }

  /** The transport's handler: each line on its own, concurrently; nothing is returned or thrown. */
  receive(lines: readonly string[], from: Address): void {
    for (const line of lines) void this.handle(line, from)
  }

  /** Handles one line from `from` (the transport's authenticated peer); resolves with its outcome, never rejecting. */
  handle(line: string, from: Address, again = false): Promise<O> {
    const running = this.p.decide(line, from, again).then(
      (outcome) => this.p.count(from, outcome),
      (error: unknown) => this.p.count(from, this.p.internalError(from, error)),
    )
    this.inFlight.add(running)
    void running.then(() => this.inFlight.delete(running))
    return running
  }

  /**
   * Why `line` is refused before it is read, or undefined: it goes on. The line counts among those in flight from
   * here on (`handle` adds it once this returns); one taken `again` was counted against its peer's rate when it came.
   */
  admit(line: string, from: Address, again = false): LineRefusal | undefined {
    if (this.stopped) return { reason: 'overloaded', detail: 'stopping' }
    if (line.length > this.p.limits.maxLineLength) return { reason: 'too_large', detail: `${line.length} characters` }
    if (!again && !this.limiter.take(from)) return { reason: 'rate_limited' }
    if (this.inFlight.size >= this.p.limits.maxInFlight) return { reason: 'overloaded' }
    return undefined
  }

  /** Takes no more lines and waits for those being handled. */
  async stop(): Promise<void> {
    this.stopped = true
    await Promise.all([...this.inFlight])
  }
}
