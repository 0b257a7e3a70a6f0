/**
 * The loop around a chain sync step, for the node's follower and the monitoring service's watch alike. One step at a
 * time (docs/decisions/0028): whoever asks while a step is under way (the loop, a catch-up, a waitForBlock) shares
 * it, since two steps side by side would be handed the same unacknowledged range and apply it twice. Once started,
 * it steps until nothing is new every polling interval; a failed round is reported and tried again at the next.
 */
export type SyncLoopParameters = {
  /** One look at the chain, applied: true when something was new (another step may follow at once). */
  step(): Promise<boolean>
  /** Milliseconds between rounds once started. */
  pollingInterval: number
  /** A failed round. */
  onError(error: unknown): void
  /** After each round, new blocks or not. */
  afterRound?(): void
}

export class SyncLoop {
  private current: Promise<boolean> | undefined
  private round: Promise<void> | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  private started = false
  private stopped = false

  constructor(private readonly p: SyncLoopParameters) {}

  /** One step, or the one under way; false when nothing was new, or once stopped. */
  syncOnce(): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false)
    this.current ??= this.p.step().finally(() => {
      this.current = undefined
    })
    return this.current
  }

  /** Steps until nothing is new (or `stopping()` says so): a catch-up before the owner is ready. */
  async catchUp(stopping: () => boolean = () => false): Promise<void> {
    while (!stopping() && (await this.syncOnce()));
  }

  /** Follows the chain from now on: a round of steps every polling interval. */
  start(): void {
    if (this.started || this.stopped) return
    this.started = true
    const next = () => {
      this.round = this.drain().finally(() => {
        this.round = undefined
        if (!this.stopped) this.timer = setTimeout(next, this.p.pollingInterval)
      })
    }
    next()
  }

  /** Stops following; resolves once no step is under way (nothing is applied after). */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.round
    await this.current?.catch(() => {})
  }

  /** Steps until nothing is new: a catch-up split in ranges, or a reorg and its resync, needs no extra interval. */
  private async drain(): Promise<void> {
    try {
      while (!this.stopped && (await this.syncOnce()));
    } catch (error) {
      this.p.onError(error)
    }
    if (!this.stopped) this.p.afterRound?.()
  }
}
