/**
 * The last events of one API, numbered, so that a client whose event stream was cut (a browser ends a service
 * worker's long answers after about five minutes; a proxy drops an idle connection) reconnects with the id of
 * the last event it saw (`Last-Event-ID`) and gets exactly the events it missed: none twice, none lost.
 * docs/decisions/0021-event-ids-and-replay.md gives the choices (ids per run, a bounded log in memory).
 */

/** One logged event: its id (`<run>-<seq>`), its name and its data already as JSON text. */
export type LoggedEvent = { id: string; event: string; data: string }

/** Where a stream resumes: the sequence number of the first event it has not seen, or why that is unknown. */
export type Resumption = { from: number } | { missed: MissedReason }

/**
 * `unknown`: the id is not one this run of the node gave (it restarted and its log is gone, or the id is not ours);
 * `too_old`: more events than the log keeps came since.
 */
export type MissedReason = 'unknown' | 'too_old'

export const DEFAULT_EVENT_LOG_CAPACITY = 10_000

export class EventLog {
  /** Tells the ids of this run from those of an earlier one (the log is not kept across restarts). */
  readonly run: string
  readonly capacity: number
  readonly #ring: (LoggedEvent | undefined)[]
  /** The sequence number the next event gets; the first event is 1, so `next - 1` is the last one's. */
  #next = 1
  readonly #listeners = new Set<() => void>()

  constructor({ capacity = DEFAULT_EVENT_LOG_CAPACITY, run = randomRun() }: { capacity?: number; run?: string } = {}) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError(`capacity must be a positive integer, not ${capacity}`)
    if (!/^[0-9a-z]+$/.test(run)) throw new RangeError(`a run is lowercase letters and digits, not ${JSON.stringify(run)}`)
    this.run = run
    this.capacity = capacity
    this.#ring = new Array(capacity)
  }

  /** The sequence number the next event will get. */
  get next(): number {
    return this.#next
  }

  /** The sequence number of the oldest event still kept. */
  get first(): number {
    return Math.max(1, this.#next - this.capacity)
  }

  /** The id that stands for "every event so far": a stream that starts now says it is up to date to here. */
  get headId(): string {
    return this.idOf(this.#next - 1)
  }

  idOf(seq: number): string {
    return `${this.run}-${seq}`
  }

  /** Appends an event and wakes every waiting stream. */
  append(event: string, data: string): LoggedEvent {
    const seq = this.#next++
    const logged = { id: this.idOf(seq), event, data }
    this.#ring[seq % this.capacity] = logged
    for (const listener of this.#listeners) listener()
    return logged
  }

  /** The event with this sequence number, or undefined if it is not yet or no longer kept. */
  at(seq: number): LoggedEvent | undefined {
    if (seq < this.first || seq >= this.#next) return undefined
    return this.#ring[seq % this.capacity]
  }

  /** Where a stream that last saw `lastEventId` resumes. Any string is accepted: it comes from a client. */
  resume(lastEventId: string): Resumption {
    const match = /^([0-9a-z]+)-(0|[1-9][0-9]{0,15})$/.exec(lastEventId)
    if (!match || match[1] !== this.run) return { missed: 'unknown' }
    const seen = Number(match[2])
    // An id this run has not given yet is not one we gave: treat it as foreign rather than wait for it.
    if (seen >= this.#next) return { missed: 'unknown' }
    if (seen + 1 < this.first) return { missed: 'too_old' }
    return { from: seen + 1 }
  }

  /** Calls `listener` after every append until the returned function is called. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** How many streams follow the log (each gives its subscription back when it ends). */
  get listenerCount(): number {
    return this.#listeners.size
  }
}

function randomRun(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(5))
  return Array.from(bytes, (b) => b.toString(36).padStart(2, '0')).join('')
}
