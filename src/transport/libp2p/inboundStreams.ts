import type { Connection, Stream } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import type { Address } from 'viem'
import { TransportError } from '../errors.ts'
import { decodeFrame, maxFrameBytes } from './frames.ts'
import { addressOfPeer } from './peerIdentity.ts'
import { RateLimit } from './rateLimit.ts'

/** What one peer may send a node over its message streams (docs/decisions/0064). */
export type InboundLimits = {
  /** Bytes a second of one peer's frames (default 1 MiB). */
  bytesPerSecond?: number
  /** Lines a second (default 1000): each is a signature to recover before it is known to be anything. */
  linesPerSecond?: number
  /**
   * Milliseconds a second the node may spend on one peer's lines, as the receiver tells (default 500: half of
   * its time, whatever its signature engine: pure JS recovers a few hundred a second, native thousands).
   */
  busyMsPerSecond?: number
}

export const defaultInboundLimits = { bytesPerSecond: 1024 * 1024, linesPerSecond: 1000, busyMsPerSecond: 500 } as const

/** What the inbound streams refused or held back, since start (`Libp2pTransport.stats()`). */
export type InboundCounters = {
  framesReceived: number
  /** Frames that were not a JSON array of strings: the stream was closed. */
  invalidFrames: number
  /** Frames announced longer than the largest a node takes (4 MiB): refused before reading them, the stream closed. */
  oversizedFrames: number
  /** Frames held back because their peer was over its bytes or lines a second: its stream waited, nothing was lost. */
  rateLimited: number
}

export type InboundStreamsParameters = {
  limits?: InboundLimits
  /**
   * Hands a frame's lines up; the peer's next frame is read once the promise it returns (if any) settles, so that a
   * peer that sends faster than they are taken waits in its own stream, not in front of everyone's. A promise of a
   * number: the milliseconds they took, counted against the peer's `busyMsPerSecond`.
   */
  deliver: (lines: string[], from: Address) => unknown
  /** Whether the transport runs: nothing is handed up once it stops. */
  running: () => boolean
  log?: (event: { type: 'invalidFrame' | 'oversizedFrame'; from: Address }) => void
}

/** How many lines of a frame are handed up at once (a node recovers a signature for each). */
const linesAtOnce = 16

/** lpStream's errors for a length prefix past `maxDataLength` (or one that is no length at all). */
const refusedLength = new Set(['InvalidDataLengthError', 'InvalidDataLengthLengthError', 'InvalidMessageLengthError'])

/**
 * The message streams peers open to us (docs/transport.md): each read frame by frame, every frame counted against
 * its peer's rate; a peer over it has its stream paused (yamux then stops granting it window, so its sends wait in
 * its own stream), no frame is lost. A frame that is no frame of ours closes the stream.
 */
export class InboundStreams {
  readonly counters: InboundCounters = { framesReceived: 0, invalidFrames: 0, oversizedFrames: 0, rateLimited: 0 }
  readonly #parameters: InboundStreamsParameters
  readonly #open = new Set<Stream>()
  readonly #bytes: RateLimit
  readonly #lines: RateLimit
  readonly #busy: RateLimit

  constructor(parameters: InboundStreamsParameters) {
    this.#parameters = parameters
    this.#bytes = new RateLimit(parameters.limits?.bytesPerSecond ?? defaultInboundLimits.bytesPerSecond)
    this.#lines = new RateLimit(parameters.limits?.linesPerSecond ?? defaultInboundLimits.linesPerSecond)
    this.#busy = new RateLimit(parameters.limits?.busyMsPerSecond ?? defaultInboundLimits.busyMsPerSecond)
  }

  /** Message streams open now. */
  get size(): number {
    return this.#open.size
  }

  /** libp2p's handler of the message protocol. */
  readonly handle = async (stream: Stream, connection: Connection): Promise<void> => {
    const { deliver, running, log } = this.#parameters
    const from = addressOfPeer(connection.remotePeer)
    if (!from || !running()) {
      stream.abort(new TransportError('not a sluice peer'))
      return
    }
    this.#open.add(stream)
    const peer = from.toLowerCase()
    // lpStream reads the length prefix first and throws past maxDataLength: an oversized frame is never read.
    const lp = lpStream(stream, { maxDataLength: maxFrameBytes })
    try {
      for (;;) {
        const frame = await lp.read()
        this.counters.framesReceived++
        const lines = decodeFrame(frame.subarray())
        if (!lines) {
          this.counters.invalidFrames++
          log?.({ type: 'invalidFrame', from })
          stream.abort(new TransportError('invalid frame'))
          return
        }
        const wait = Math.max(this.#bytes.take(peer, frame.byteLength), this.#lines.take(peer, lines.length))
        if (wait > 0) {
          this.counters.rateLimited++
          await paused(stream, wait)
        }
        // A few lines at a time, each handed up once the last is taken: another peer's lines wait behind a few of
        // these, not behind a whole frame of them. Meanwhile the stream is paused, so that what the peer sends on
        // waits on its side (libp2p would otherwise buffer it here, and reset the stream past 4 MiB).
        for (let i = 0; i < lines.length && running(); i += linesAtOnce) {
          const taken = deliver(lines.slice(i, i + linesAtOnce), from)
          if (!(taken instanceof Promise)) continue
          // What the receiver makes of the lines is its own to report; the stream reads on.
          const spent: unknown = await paused(
            stream,
            taken.catch(() => undefined),
          )
          const busy = typeof spent === 'number' ? this.#busy.take(peer, Math.ceil(spent)) : 0
          if (busy > 0) {
            this.counters.rateLimited++
            await paused(stream, busy)
          }
        }
      }
    } catch (error) {
      if (error instanceof Error && refusedLength.has(error.name)) {
        this.counters.oversizedFrames++
        log?.({ type: 'oversizedFrame', from })
        stream.abort(new TransportError('frame too large'))
      }
      // Otherwise the stream ended: the peer closed it, went away, or we are stopping. It opens a new one to send again.
    } finally {
      this.#open.delete(stream)
      // Our end too (a peer that moved to another connection closed its own): nothing of ours goes on it.
      if (stream.status === 'open') void stream.close().catch(() => {})
    }
  }

  /** Closes every inbound stream (the transport stops). */
  closeAll(): void {
    for (const stream of this.#open) stream.abort(new TransportError('transport stopped'))
  }
}

/**
 * Pauses reading `stream` until `done` settles, or for `done` milliseconds (or until the stream closes): yamux stops
 * granting the sender window, so what it sends meanwhile waits on its side (at most one window lands here).
 */
async function paused<T>(stream: Stream, done: Promise<T> | number): Promise<T | undefined> {
  try {
    stream.pause()
  } catch {
    // Its readable end is closed already: nothing more comes to hold back.
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  let closed = () => {}
  const ended = new Promise<undefined>((resolve) => {
    closed = () => resolve(undefined)
    stream.addEventListener('close', closed)
    if (typeof done === 'number') timer = setTimeout(closed, done)
  })
  const result = await (typeof done === 'number' ? ended : Promise.race([done, ended]))
  clearTimeout(timer)
  stream.removeEventListener('close', closed)
  try {
    stream.resume()
  } catch {
    // Closed meanwhile.
  }
  return result
}
