/** Lets at most `capacity` holders in at once; the rest wait in arrival order. */
export class Semaphore {
  private active = 0
  private readonly waiting: (() => void)[] = []

  constructor(private readonly capacity: number) {}

  async acquire(): Promise<() => void> {
    if (this.active >= this.capacity) await new Promise<void>((resolve) => this.waiting.push(resolve))
    else this.active++
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.waiting.shift()
      if (next) next()
      else this.active--
    }
  }
}
