/** Counts by reason, for one source or in all. */
export type DropCounts<Reason extends string> = Partial<Record<Reason, number>>

export type DropLogParameters<Reason extends string> = {
  /** Told, once per interval at most for each source that had drops in it, how many of each reason. */
  report?: (source: string, counts: DropCounts<Reason>) => void
  /** How long drops are gathered before they are reported (default 60 s). */
  intervalMs?: number
  /** Sources told apart in one interval; drops of any more go under `others` (a flood of addresses is one line). */
  maxSources?: number
}

/**
 * What a relay refused, dropped or held back, counted since start by reason, and told by source (a peer or an IP
 * address) in one line per source per interval at most: a flood is a few lines a minute in the operator's log, not
 * one per dropped frame (docs/decisions/0064).
 */
export class DropLog<Reason extends string> {
  readonly #totals: Record<string, number>
  readonly #pending = new Map<string, Record<string, number>>()
  readonly #report: DropLogParameters<Reason>['report']
  readonly #intervalMs: number
  readonly #maxSources: number
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor(reasons: readonly Reason[], parameters: DropLogParameters<Reason> = {}) {
    this.#totals = Object.fromEntries(reasons.map((r) => [r, 0]))
    this.#report = parameters.report
    this.#intervalMs = parameters.intervalMs ?? 60_000
    this.#maxSources = parameters.maxSources ?? 1000
  }

  count(source: string, reason: Reason, n = 1): void {
    this.#totals[reason] = (this.#totals[reason] ?? 0) + n
    if (!this.#report) return
    const key = this.#pending.has(source) || this.#pending.size < this.#maxSources ? source : 'others'
    const counts = this.#pending.get(key) ?? {}
    counts[reason] = (counts[reason] ?? 0) + n
    this.#pending.set(key, counts)
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.flush(), this.#intervalMs)
      // A relay that stops does not wait for the next report: stop() flushes.
      ;(this.#timer as { unref?: () => void }).unref?.()
    }
  }

  /** Every reason's count since start. */
  totals(): Record<Reason, number> {
    return { ...this.#totals } as Record<Reason, number>
  }

  /** Reports what was gathered now, one call per source. */
  flush(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    const pending = [...this.#pending]
    this.#pending.clear()
    for (const [source, counts] of pending) {
      try {
        this.#report?.(source, counts as DropCounts<Reason>)
      } catch {
        // The log's failure is not the relay's.
      }
    }
  }

  stop(): void {
    this.flush()
  }
}
