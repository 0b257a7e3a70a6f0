import type { PeerId, Stream } from '@libp2p/interface'
import { lpStream, type LengthPrefixedStream } from '@libp2p/utils'
import type { Address } from 'viem'
import { SerialByKey } from '../../serialByKey.ts'
import { PeerUnreachableError, TransportClosedError, TransportError } from '../errors.ts'
import { maxFrameBytes } from './frames.ts'

type Outbound = { stream: Stream; lp: LengthPrefixedStream<Stream> }

export type OutboundStreamsParameters = {
  /** Opens a message stream to a peer (libp2p's `dialProtocol` of the message protocol, over limited connections too). */
  dial: (peerId: PeerId, signal: AbortSignal) => Promise<Stream>
  /** The PeerId to send to now, or undefined if the peer is unknown or the transport stopped (the send fails closed). */
  lookup: (peer: string) => PeerId | undefined
  /** Give up opening a stream after this long. */
  dialTimeoutMs: number
  /** Give up writing a batch to an open stream after this long. */
  sendTimeoutMs: number
  log?: (event: { type: 'streamFailed'; peer?: Address; error: unknown }) => void
}

/**
 * The outbound message streams (docs/transport.md, Messages on a stream): one per peer (lowercase address), opened
 * on the first send or ahead of it (`warm`), reused for every batch and reopened when it breaks. Batches to one
 * peer go out one after the other, in the order given.
 */
export class OutboundStreams {
  readonly counters = { streamsOpened: 0, framesSent: 0 }
  readonly #parameters: OutboundStreamsParameters
  /** The stream to each peer, open or being opened. */
  readonly #streams = new Map<string, Promise<Outbound>>()
  /** Per peer, the send in progress. */
  readonly #sending = new SerialByKey()

  constructor(parameters: OutboundStreamsParameters) {
    this.#parameters = parameters
  }

  /** Writes `frames` to `peer` after its sends under way; rejects with PeerUnreachableError (or TransportClosedError). */
  send(to: Address, frames: Uint8Array[]): Promise<void> {
    const key = to.toLowerCase()
    return this.#sending.run(key, () => this.#deliver(to, key, frames))
  }

  /** Whether a stream to `peer` is open or being opened. */
  has(peer: string): boolean {
    return this.#streams.has(peer.toLowerCase())
  }

  /** Opens the stream to a known peer ahead of a send; a failure is the next send's to find (it dials again). */
  warm(peer: string): void {
    const key = peer.toLowerCase()
    const peerId = this.#parameters.lookup(key)
    if (!peerId || this.#streams.has(key)) return
    this.#open(key, peerId).catch((error: unknown) => this.#parameters.log?.({ type: 'streamFailed', peer: key as Address, error }))
  }

  /**
   * The next batch to `peer` opens a new stream (a better way to it came up: a direct connection, over WebSockets or WebRTC); this one is
   * closed once the batches already given to it are written. Resolves then.
   */
  retire(peer: string): Promise<void> {
    const key = peer.toLowerCase()
    const opening = this.#streams.get(key)
    if (!opening) return Promise.resolve()
    this.#streams.delete(key)
    return this.#sending
      .run(key, async () => {
        const { stream } = await opening
        await stream
          .close({ signal: AbortSignal.timeout(this.#parameters.sendTimeoutMs) })
          .catch((error: unknown) => stream.abort(error instanceof Error ? error : new TransportError(String(error))))
      })
      .catch(() => {})
  }

  /** Aborts every stream (the transport stops). */
  closeAll(): void {
    for (const [key, opening] of [...this.#streams]) this.#drop(key, opening)
  }

  async #deliver(to: Address, key: string, frames: Uint8Array[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const peerId = this.#parameters.lookup(key)
      if (!peerId) throw new TransportClosedError('send')
      const reused = this.#streams.has(key)
      const opening = this.#open(key, peerId)
      try {
        const { lp } = await opening
        const signal = AbortSignal.timeout(this.#parameters.sendTimeoutMs)
        for (const frame of frames) {
          await lp.write(frame, { signal })
          this.counters.framesSent++
        }
        return
      } catch (error) {
        this.#drop(key, opening)
        // A stream that was open before this send may sit on a connection that died unnoticed (the peer
        // restarted): one fresh dial is worth it. A failed fresh dial is the answer (the peer is offline).
        if (!reused || attempt > 0 || !this.#parameters.lookup(key)) {
          this.#parameters.log?.({ type: 'streamFailed', peer: to, error })
          throw new PeerUnreachableError(to, error)
        }
      }
    }
  }

  #open(key: string, peerId: PeerId): Promise<Outbound> {
    const existing = this.#streams.get(key)
    if (existing) return existing
    const opening = (async () => {
      const stream = await this.#parameters.dial(peerId, AbortSignal.timeout(this.#parameters.dialTimeoutMs))
      this.counters.streamsOpened++
      stream.addEventListener('close', () => {
        if (this.#streams.get(key) === opening) this.#streams.delete(key)
      })
      return { stream, lp: lpStream(stream, { maxDataLength: maxFrameBytes }) }
    })()
    this.#streams.set(key, opening)
    opening.catch(() => {
      if (this.#streams.get(key) === opening) this.#streams.delete(key)
    })
    return opening
  }

  #drop(key: string, opening: Promise<Outbound>): void {
    if (this.#streams.get(key) === opening) this.#streams.delete(key)
    void opening.then(({ stream }) => stream.abort(new TransportError('stream replaced'))).catch(() => {})
  }
}
