import type { PeerId, Stream } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import { addressOfPeer } from './peerIdentity.ts'
import {
  encodePresence,
  maxClockSkewMs,
  maxPresenceFrameBytes,
  maxWatches,
  readAnnouncement,
  readToRelay,
  type FromRelay,
  type PresenceRecord,
} from './presence.ts'

export type PresenceRegistryParameters = {
  /** The most records kept at once; the oldest go first (default 100,000). */
  maxRecords?: number
  /** A peer's record is handed to its watchers at most this often; a newer one waits, and only the newest goes (default 1 s). */
  minPushIntervalMs?: number
  now?: () => number
}

/**
 * What the relay's limits allow one presence stream (relayLimits.ts): whether its node's record may be put now, how
 * many of `wanted` new watches it may have, and the release of those it had when the stream ends.
 */
export type PresenceAdmission = { put(): boolean; watch(wanted: number): number; release(): void }

/**
 * A node's presence stream, as the registry sees it: who it is, what it watches, how to hand it records, and how to
 * tell it that the registry no longer keeps the record of a watched address.
 */
export type Watcher = { peer: string; watching: Set<string>; send(records: PresenceRecord[]): void; gone(addresses: string[]): void }

type Kept = { record: PresenceRecord; ts: number; pushedAt: number; timer?: ReturnType<typeof setTimeout> }

/** Writes a stream may have waiting before its reader is taken for stuck and the stream aborted. */
const maxPendingWrites = 64

/**
 * A relay's presence registry (docs/transport.md, Presence): the newest signed record of each node that put one, by
 * Ethereum address, handed to the nodes that watch that address: at once when they ask, and whenever a newer one
 * comes. Each record reaches only those who asked for it, so presence costs the relay a few messages per node and
 * per watcher, not one message per node to every node (the gossipsub topic's N² a minute). A record is taken only
 * from the peer it names, over that peer's own connection (Noise proved it); its signature is the receivers' to
 * check. A record goes when its node leaves the relay, or once it is older than the receivers' clock window, and its
 watchers are told (`gone`): while a relay keeps a node's record, the node is online there.
 */
export class PresenceRegistry {
  readonly #maxRecords: number
  readonly #minPushIntervalMs: number
  readonly #now: () => number
  /** By lowercase address; a Map keeps insertion order, so the first is the one put longest ago. */
  readonly #records = new Map<string, Kept>()
  readonly #watchers = new Map<string, Set<Watcher>>()
  readonly #streams = new Set<Stream>()
  readonly #sweep: ReturnType<typeof setInterval>

  constructor(parameters: PresenceRegistryParameters = {}) {
    this.#maxRecords = parameters.maxRecords ?? 100_000
    this.#minPushIntervalMs = parameters.minPushIntervalMs ?? 1_000
    this.#now = parameters.now ?? Date.now
    this.#sweep = setInterval(() => this.sweep(), 60_000)
  }

  /** How many records it keeps and how many addresses are watched (by how many streams in all). */
  stats(): { records: number; watched: number; watches: number } {
    let watches = 0
    for (const set of this.#watchers.values()) watches += set.size
    return { records: this.#records.size, watched: this.#watchers.size, watches }
  }

  /**
   * Serves one node's presence stream until it ends: its record and watches in, the records it watches out; within
   * what `admission` allows, if given.
   */
  async serve(stream: Stream, remote: PeerId, admission?: PresenceAdmission): Promise<void> {
    const lp = lpStream(stream, { maxDataLength: maxPresenceFrameBytes })
    let pending = 0
    const write = (message: FromRelay) => {
      if (pending >= maxPendingWrites) {
        stream.abort(new Error('presence stream not read'))
        return
      }
      pending++
      lp.write(encodePresence(message)).then(
        () => pending--,
        () => stream.abort(new Error('presence stream failed')),
      )
    }
    const watcher: Watcher = {
      peer: remote.toString(),
      watching: new Set(),
      send: (records) => write({ records }),
      gone: (addresses) => write({ records: [], gone: addresses }),
    }
    this.#streams.add(stream)
    try {
      for (;;) {
        const message = readToRelay((await lp.read()).subarray())
        if (!message) {
          stream.abort(new Error('invalid presence message'))
          return
        }
        if (message.put && (admission?.put() ?? true)) this.put(remote, message.put)
        if (message.watch) this.watch(watcher, message.watch, admission)
      }
    } catch {
      // The stream ended: the node went away, or restarts its stream.
    } finally {
      this.#streams.delete(stream)
      this.#unwatchAll(watcher)
      admission?.release()
    }
  }

  /**
   * `from`'s record, if it names `from`, reads as an announcement within the clock window and is newer than the one
   * kept: kept, and handed to its watchers. False when it is not taken.
   */
  put(from: PeerId, record: PresenceRecord): boolean {
    const address = addressOfPeer(from)?.toLowerCase()
    if (!address || record.peer !== from.toString()) return false
    const announcement = readAnnouncement(new TextEncoder().encode(record.announcement))
    const now = this.#now()
    if (!announcement || Math.abs(announcement.ts - now) > maxClockSkewMs) return false
    let kept = this.#records.get(address)
    if (kept && announcement.ts <= kept.ts) return false
    if (kept) {
      // Moved to the end: the order is that of the latest put.
      this.#records.delete(address)
      kept.record = record
      kept.ts = announcement.ts
    } else kept = { record, ts: announcement.ts, pushedAt: 0 }
    this.#records.set(address, kept)
    while (this.#records.size > this.#maxRecords) this.#forget(this.#records.keys().next().value!)
    this.#push(address, kept)
    return true
  }

  /** Hands the record to its watchers now, or once `minPushIntervalMs` has passed since the last time (the newest then). */
  #push(address: string, kept: Kept): void {
    if (kept.timer !== undefined) return
    const wait = kept.pushedAt + this.#minPushIntervalMs - this.#now()
    if (wait > 0) {
      kept.timer = setTimeout(() => {
        kept.timer = undefined
        if (this.#records.get(address) === kept) this.#push(address, kept)
      }, wait)
      return
    }
    kept.pushedAt = this.#now()
    const watchers = this.#watchers.get(address)
    if (!watchers) return
    for (const watcher of watchers) if (watcher.peer !== kept.record.peer) watcher.send([kept.record])
  }

  /**
   * Adds addresses to what `watcher` watches (up to `maxWatches`, and as many as `admission` allows), and hands it the
   * records kept of them now.
   */
  watch(watcher: Watcher, addresses: readonly string[], admission?: Pick<PresenceAdmission, 'watch'>): void {
    const found: PresenceRecord[] = []
    const fresh = [...new Set(addresses)].filter((a) => !watcher.watching.has(a)).slice(0, Math.max(0, maxWatches - watcher.watching.size))
    const granted = admission ? admission.watch(fresh.length) : fresh.length
    for (const address of fresh.slice(0, granted)) {
      watcher.watching.add(address)
      const set = this.#watchers.get(address) ?? new Set()
      this.#watchers.set(address, set)
      set.add(watcher)
      const kept = this.#records.get(address)
      if (kept && kept.record.peer !== watcher.peer) found.push(kept.record)
    }
    if (found.length > 0) watcher.send(found)
  }

  #unwatchAll(watcher: Watcher): void {
    for (const address of watcher.watching) {
      const set = this.#watchers.get(address)
      set?.delete(watcher)
      if (set?.size === 0) this.#watchers.delete(address)
    }
    watcher.watching.clear()
  }

  /**
   * The peer left the relay (its last connection closed): its record goes, since its circuit through this relay is
   * dead and watchers would dial it in vain. It puts it again when it comes back.
   */
  left(peer: PeerId): void {
    const address = addressOfPeer(peer)?.toLowerCase()
    if (address && this.#records.get(address)?.record.peer === peer.toString()) this.#forget(address)
  }

  /** Drops a record and tells its watchers it is gone (the record they were handed no longer says where the node is). */
  #forget(address: string): void {
    const kept = this.#records.get(address)
    if (!kept) return
    clearTimeout(kept.timer)
    this.#records.delete(address)
    // Those never handed it (its push still waiting) are told all the same: a gone for an address not held is nothing.
    for (const watcher of this.#watchers.get(address) ?? []) if (watcher.peer !== kept.record.peer) watcher.gone([address])
  }

  /** Drops the records that receivers would refuse as too old (each node puts its own again every few minutes). */
  sweep(): void {
    const oldest = this.#now() - maxClockSkewMs
    for (const [address, kept] of this.#records) if (kept.ts < oldest) this.#forget(address)
  }

  stop(): void {
    clearInterval(this.#sweep)
    for (const kept of this.#records.values()) clearTimeout(kept.timer)
    this.#records.clear()
    for (const stream of this.#streams) stream.abort(new Error('relay stopping'))
  }
}
