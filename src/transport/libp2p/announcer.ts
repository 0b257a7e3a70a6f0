import type { Announcement } from './presence.ts'

export type AnnouncerParameters = {
  /** Publishes an announcement: signed to the relays' registries, and on the gossipsub topic. */
  publish: (announcement: Announcement) => Promise<unknown>
  /** Where this node can be dialled now: its circuit addresses, then its direct ones. */
  addresses: () => string[]
  /** Milliseconds between announcements. */
  intervalMs: number
  log?: (event: { type: 'announced'; addresses: string[] } | { type: 'streamFailed'; error: unknown }) => void
}

const randomId = () => Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('')

/**
 * This node's presence announcements (docs/transport.md, Presence): on start, every `intervalMs`, and soon after
 * something changes (a new reservation, a newcomer, a relay joining the topic), once for a burst of such reasons.
 * Nothing is announced while the node has no address (no reservation yet, no direct address): peers would only dial
 * in vain.
 */
export class Announcer {
  readonly #parameters: AnnouncerParameters
  /** Random per start: a peer that sees a new one knows this node restarted. */
  #session = randomId()
  #running = false
  #interval: ReturnType<typeof setInterval> | undefined
  #soon: ReturnType<typeof setTimeout> | undefined

  constructor(parameters: AnnouncerParameters) {
    this.#parameters = parameters
  }

  /** A new session; announces soon, then every `intervalMs`. */
  start(): void {
    this.#session = randomId()
    this.#running = true
    this.soon()
    this.#interval = setInterval(() => this.announce(), this.#parameters.intervalMs)
  }

  stop(): void {
    this.#running = false
    clearInterval(this.#interval)
    clearTimeout(this.#soon)
    this.#soon = undefined
  }

  announce(): void {
    const { addresses, publish, log } = this.#parameters
    if (!this.#running) return
    const addrs = addresses()
    if (addrs.length === 0) return
    publish({ v: 1, session: this.#session, addrs, ts: Date.now() }).then(
      () => log?.({ type: 'announced', addresses: addrs }),
      (error: unknown) => log?.({ type: 'streamFailed', error }),
    )
  }

  /** Announces in 20 to 100 ms, once for however many calls come meanwhile. */
  soon(): void {
    if (this.#soon !== undefined || !this.#running) return
    this.#soon = setTimeout(
      () => {
        this.#soon = undefined
        this.announce()
      },
      20 + Math.random() * 80,
    )
  }
}
