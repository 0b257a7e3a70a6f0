/**
 * The node's push events (GET /api/v1/events) for a page's listener, read over the request channel rather than
 * through the service worker (which the browser stops minutes into a stream). A stream that ends or breaks (the
 * node moved to another tab, a worker restarted) is opened again with `Last-Event-ID`, so the node replays what
 * was missed; the listener sees every event once, in order.
 */
import { createParser } from 'eventsource-parser'
import { API_PATH } from './names.ts'
import type { PushEvent, SendRequest } from './nodeClient.ts'

export type { PushEvent, PushEventOf } from './nodeClient.ts'
export type PushListener = (event: PushEvent) => void

/** Milliseconds before reconnecting: the node's `retry:` when it sent one, growing while the node is away. */
const FIRST_RETRY_MS = 500
const MAX_RETRY_MS = 5_000

/** Calls `listener` with each event until the returned function is called. */
export function subscribeToEvents(send: SendRequest, listener: PushListener, origin = globalThis.location.origin): () => void {
  const abort = new AbortController()
  let lastEventId: string | undefined
  let retryMs = FIRST_RETRY_MS
  let serverRetryMs: number | undefined

  const readOnce = async (): Promise<void> => {
    const headers: Record<string, string> = { accept: 'text/event-stream' }
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
    const response = await send(new Request(`${origin}${API_PATH}/events`, { headers, signal: abort.signal }))
    if (!response.ok || !response.body) {
      await response.body?.cancel()
      return
    }
    retryMs = FIRST_RETRY_MS
    const parser = createParser({
      onEvent: (message) => {
        if (message.id !== undefined) lastEventId = message.id
        let data: unknown
        try {
          data = JSON.parse(message.data)
        } catch {
          return
        }
        // What the node wrote: each name's data is what openapi.json documents (test/api/events.test.ts checks the node).
        const event = { event: message.event ?? 'message', ...(message.id !== undefined ? { id: message.id } : {}), data } as PushEvent
        try {
          listener(event)
        } catch (e) {
          // A listener's bug is the page's to see, and must not end the subscription.
          globalThis.reportError(e)
        }
      },
      onRetry: (ms) => (serverRetryMs = ms),
    })
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        parser.feed(value)
      }
    } finally {
      reader.cancel().catch(() => {})
    }
  }

  void (async () => {
    while (!abort.signal.aborted) {
      await readOnce().catch(() => {})
      if (abort.signal.aborted) return
      await new Promise((resolve) => setTimeout(resolve, serverRetryMs ?? retryMs))
      retryMs = Math.min(retryMs * 2, MAX_RETRY_MS)
    }
  })()
  return () => abort.abort()
}
