/**
 * How the service worker passes an event stream (GET /api/v1/events) on to a page. Two things of the browsers
 * make it more than a pipe (docs/decisions/0021-event-ids-and-replay.md):
 *
 * - Chromium and Firefox stop a service worker about five minutes into one event, even mid-stream
 *   (w3c/ServiceWorker#1182), and EventSource takes a stream broken that way as a failure: it closes for good.
 *   So the relay ends the stream itself before that, cleanly; EventSource then reconnects.
 * - Chromium adds the `Last-Event-ID` of that reconnection below the service worker, which never sees it. So the
 *   relay remembers the id of the last event it passed on, and the service worker puts it on the reconnection
 *   (`ResumeIds`), for the node to replay what came after.
 *
 * The relay forwards whole events only: an event cut off by the end is dropped, and is replayed since its id
 * was never seen.
 */

/** A minute short of the browsers' five. */
export const DEFAULT_EVENT_STREAM_SECONDS = 240

/** How a relayed stream ended: `cut` by the time limit, `ended` by the node, `cancelled` by the page, `failed`. */
export type RelayEnd = 'cut' | 'ended' | 'cancelled' | 'failed'

export function relayEventStream(
  body: ReadableStream<Uint8Array>,
  { seconds, onEnd }: { seconds: number; onEnd?(how: RelayEnd, lastEventId: string | undefined): void },
): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const encoder = new TextEncoder()
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let partial = ''
  let lastEventId: string | undefined
  let done = false
  const finish = (how: RelayEnd, error?: unknown) => {
    if (done) return
    done = true
    clearTimeout(timer)
    if (how === 'failed') controller.error(error)
    else if (how !== 'cancelled') controller.close()
    if (how !== 'ended' && how !== 'failed') reader.cancel().catch(() => {})
    onEnd?.(how, lastEventId)
  }
  const timer = setTimeout(() => finish('cut'), seconds * 1000)
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c
    },
    // Reads until a whole event can be passed on: a pull that enqueues nothing is not called again.
    async pull() {
      for (;;) {
        let read: ReadableStreamReadResult<Uint8Array>
        try {
          read = await reader.read()
        } catch (error) {
          return finish('failed', error)
        }
        if (done) return
        if (read.done) return finish('ended')
        const text = partial + decoder.decode(read.value, { stream: true })
        const end = text.lastIndexOf('\n\n')
        if (end === -1) {
          partial = text
          continue
        }
        const whole = text.slice(0, end + 2)
        partial = text.slice(end + 2)
        for (const [, id] of whole.matchAll(/^id: ?(.*)$/gm)) lastEventId = id
        return controller.enqueue(encoder.encode(whole))
      }
    },
    cancel() {
      finish('cancelled')
    },
  })
}

/** The limit a service worker script was registered with (`sluice-sw.js?event_stream_seconds=N`), else the default. */
export function eventStreamSeconds(scriptUrl: string): number {
  const given = Number(new URL(scriptUrl).searchParams.get('event_stream_seconds'))
  return Number.isFinite(given) && given > 0 ? given : DEFAULT_EVENT_STREAM_SECONDS
}

/**
 * The last event ids of streams that ended under a page (cut, or ended by the node), by page and URL, for the
 * EventSource reconnection that follows within seconds. Kept a minute; a page with two streams of one URL gets
 * the older id first, so a mix-up replays an event twice rather than losing one.
 */
export class ResumeIds {
  readonly #ids = new Map<string, { id: string; at: number }[]>()
  constructor(readonly keepMs = 60_000) {}

  remember(clientId: string, url: string, id: string, now = Date.now()): void {
    const key = `${clientId} ${url}`
    const ids = (this.#ids.get(key) ?? []).filter((e) => now - e.at < this.keepMs)
    ids.push({ id, at: now })
    this.#ids.set(key, ids)
  }

  /** The id to resume a new stream of this page and URL from, taken once; undefined if none. */
  take(clientId: string, url: string, now = Date.now()): string | undefined {
    const key = `${clientId} ${url}`
    const ids = (this.#ids.get(key) ?? []).filter((e) => now - e.at < this.keepMs)
    const oldest = ids.shift()
    if (ids.length > 0) this.#ids.set(key, ids)
    else this.#ids.delete(key)
    // Sweep others that were never taken (their page closed).
    for (const [k, v] of this.#ids) if (v.every((e) => now - e.at >= this.keepMs)) this.#ids.delete(k)
    return oldest?.id
  }
}
