import { maxClockSkewMs, type PresenceRecord } from './presence.ts'

/** What the book holds of one address: which relays keep its record now (with the record's time), and the newest record. */
type Entry = { heldBy: Map<string, number>; record: PresenceRecord; ts: number }

/**
 * Who is online, as the relays say (docs/decisions/0072): for each watched address, the relays that keep its record
 * now, from the records they hand on and the `gone` they send once they drop one. An address is online while one of
 * them keeps a record of it that is fresh (within the receivers' clock window: its node puts a new one every few
 * minutes, and a relay drops one older than that). A stream to a relay that ends takes what that relay said with it;
 * the next stream says it all again.
 */
export class PresenceBook {
  readonly #entries = new Map<string, Entry>()
  readonly #now: () => number

  constructor(now: () => number = Date.now) {
    this.#now = now
  }

  /** `relay` handed on this record of `address` (its signature checked), announced at `ts`. */
  put(address: string, relay: string, record: PresenceRecord, ts: number): void {
    const key = address.toLowerCase()
    let entry = this.#entries.get(key)
    if (!entry) {
      entry = { heldBy: new Map(), record, ts }
      this.#entries.set(key, entry)
    }
    entry.heldBy.set(relay, Math.max(ts, entry.heldBy.get(relay) ?? 0))
    if (ts >= entry.ts) {
      entry.record = record
      entry.ts = ts
    }
  }

  /** `relay` no longer keeps a record of `address`. */
  gone(address: string, relay: string): void {
    const key = address.toLowerCase()
    const entry = this.#entries.get(key)
    if (!entry) return
    entry.heldBy.delete(relay)
    if (entry.heldBy.size === 0) this.#entries.delete(key)
  }

  /** The stream to `relay` ended: nothing it said holds any more. */
  lost(relay: string): void {
    for (const [key, entry] of this.#entries) {
      entry.heldBy.delete(relay)
      if (entry.heldBy.size === 0) this.#entries.delete(key)
    }
  }

  /** The newest record of `address` while a relay keeps a fresh one (it is online), else undefined. */
  online(address: string): PresenceRecord | undefined {
    const entry = this.#entries.get(address.toLowerCase())
    if (!entry) return undefined
    const oldest = this.#now() - maxClockSkewMs
    for (const ts of entry.heldBy.values()) if (ts >= oldest) return entry.record
    return undefined
  }

  /** How many addresses a relay keeps a record of (fresh or not). */
  get size(): number {
    return this.#entries.size
  }

  clear(): void {
    this.#entries.clear()
  }
}
