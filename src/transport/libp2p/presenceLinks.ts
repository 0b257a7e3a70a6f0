import type { Libp2p, PeerId, Stream } from '@libp2p/interface'
import { lpStream, type LengthPrefixedStream } from '@libp2p/utils'
import { encodePresence, maxPresenceFrameBytes, maxWatchBatch, openRecord, readFromRelay, type PresenceRecord, type ToRelay } from './presence.ts'
import type { RelayAddress } from './relayAddress.ts'

export type PresenceLinksParameters = {
  relays: readonly RelayAddress[]
  /** Opens a presence stream to a relay (over the connection to it). */
  open: (relay: PeerId, signal: AbortSignal) => Promise<Stream>
  /** A record `relay` handed on, its signature checked: the peer directory judges what it says. */
  onRecord: (peerId: PeerId, data: Uint8Array, record: PresenceRecord, relay: RelayAddress) => void
  /** `relay` no longer keeps the record of this watched address (lowercase): the node left it. */
  onGone?: (address: string, relay: RelayAddress) => void
  /** The stream to `relay` ended: what it said of who is there may no longer hold (its next stream says it again). */
  onLinkLost?: (relay: RelayAddress) => void
  /** A relay without a registry (an older `sluice relay`): presence through it is the gossipsub topic. */
  onLegacyRelay: (relay: RelayAddress) => void
  /** Give up opening a stream after this long. */
  timeoutMs: number
  log?: (event: { type: 'streamFailed'; error: unknown }) => void
}

type Link = { lp: LengthPrefixedStream<Stream>; stream: Stream }

/** How long after a presence stream broke (its relay still connected) it is opened again. */
const reopenMs = 1_000

/**
 * This node's presence streams, one to each relay it is connected to (docs/transport.md, Presence): its own signed
 * record goes to each (`put`), and the addresses it wants to hear of (`watch`); what each relay hands back is opened
 * (its signature checked) and given to `onRecord`. A stream is opened whenever a relay connects, and again after it
 * broke; everything put and watched so far is said again on each new stream, so a relay that restarted has it all.
 */
export class PresenceLinks {
  readonly #parameters: PresenceLinksParameters
  readonly #links = new Map<string, Link>()
  readonly #opening = new Set<string>()
  readonly #legacy = new Set<string>()
  readonly #watched = new Set<string>()
  /** Addresses watched since the last flush, said to every relay in one message soon. */
  readonly #toWatch: string[] = []
  readonly #timers = new Set<ReturnType<typeof setTimeout>>()
  #own: PresenceRecord | undefined
  #node: Libp2p | undefined

  constructor(parameters: PresenceLinksParameters) {
    this.#parameters = parameters
  }

  /** Opens a stream to each relay `node` is connected to now, and to each one when it connects, until `stop`. */
  start(node: Libp2p): void {
    this.#node = node
    node.addEventListener('peer:connect', this.#onConnect)
    for (const relay of this.#parameters.relays) if (node.getConnections(relay.peerId).length > 0) this.#open(relay)
  }

  /** Relays that have no registry. */
  get legacyRelays(): number {
    return this.#legacy.size
  }

  /** This node's record, to every relay now and on every stream opened later. */
  put(record: PresenceRecord): void {
    this.#own = record
    this.#sendAll({ put: record })
  }

  /** Addresses (lowercase) to hear of: the records relays keep of them now, and each newer one. Once each. */
  watch(address: string): void {
    const key = address.toLowerCase()
    if (this.#watched.has(key)) return
    this.#watched.add(key)
    this.#toWatch.push(key)
    // Those that come in one turn (a burst of connects at start) go in one message.
    if (this.#toWatch.length === 1) queueMicrotask(() => this.#flushWatches())
  }

  stop(): void {
    this.#node?.removeEventListener('peer:connect', this.#onConnect)
    this.#node = undefined
    for (const timer of this.#timers) clearTimeout(timer)
    this.#timers.clear()
    for (const { stream } of this.#links.values()) stream.abort(new Error('transport stopped'))
    this.#links.clear()
    this.#opening.clear()
    this.#watched.clear()
    this.#toWatch.length = 0
    this.#own = undefined
  }

  #flushWatches(): void {
    const batch = this.#toWatch.splice(0)
    for (let i = 0; i < batch.length; i += maxWatchBatch) this.#sendAll({ watch: batch.slice(i, i + maxWatchBatch) })
  }

  #sendAll(message: ToRelay): void {
    for (const link of this.#links.values()) this.#send(link, message)
  }

  #send(link: Link, message: ToRelay): void {
    link.lp.write(encodePresence(message)).catch((error: unknown) => link.stream.abort(error instanceof Error ? error : new Error(String(error))))
  }

  readonly #onConnect = (event: CustomEvent<PeerId>) => {
    const relay = this.#parameters.relays.find((r) => r.peerId.equals(event.detail))
    if (relay) this.#open(relay)
  }

  #open(relay: RelayAddress): void {
    const id = relay.peerId.toString()
    const node = this.#node
    if (!node || this.#links.has(id) || this.#opening.has(id) || this.#legacy.has(id)) return
    this.#opening.add(id)
    this.#parameters.open(relay.peerId, AbortSignal.timeout(this.#parameters.timeoutMs)).then(
      (stream) => {
        this.#opening.delete(id)
        if (this.#node !== node) {
          stream.abort(new Error('transport stopped'))
          return
        }
        const link: Link = { stream, lp: lpStream(stream, { maxDataLength: maxPresenceFrameBytes }) }
        this.#links.set(id, link)
        // All this relay is to know, again: it may have restarted since.
        if (this.#own) this.#send(link, { put: this.#own })
        const watched = [...this.#watched]
        for (let i = 0; i < watched.length; i += maxWatchBatch) this.#send(link, { watch: watched.slice(i, i + maxWatchBatch) })
        void this.#read(relay, link)
      },
      (error: unknown) => {
        this.#opening.delete(id)
        if ((error as Error)?.name === 'UnsupportedProtocolError') {
          this.#legacy.add(id)
          this.#parameters.onLegacyRelay(relay)
          return
        }
        this.#parameters.log?.({ type: 'streamFailed', error })
        this.#reopenLater(relay)
      },
    )
  }

  async #read(relay: RelayAddress, link: Link): Promise<void> {
    try {
      for (;;) {
        const message = readFromRelay((await link.lp.read()).subarray())
        if (!message) throw new Error('invalid presence message from the relay')
        for (const record of message.records) {
          const opened = await openRecord(record)
          if (opened && this.#node) this.#parameters.onRecord(opened.peerId, opened.data, record, relay)
        }
        for (const address of message.gone ?? []) if (this.#node) this.#parameters.onGone?.(address, relay)
      }
    } catch (error) {
      link.stream.abort(error instanceof Error ? error : new Error(String(error)))
    } finally {
      if (this.#links.get(relay.peerId.toString()) === link) this.#links.delete(relay.peerId.toString())
      this.#parameters.onLinkLost?.(relay)
      this.#reopenLater(relay)
    }
  }

  /** Opens the stream again in a moment if the relay is still connected (if not, its next connection will). */
  #reopenLater(relay: RelayAddress): void {
    if (!this.#node) return
    const timer = setTimeout(() => {
      this.#timers.delete(timer)
      if (this.#node && this.#node.getConnections(relay.peerId).length > 0) this.#open(relay)
    }, reopenMs)
    this.#timers.add(timer)
  }
}
