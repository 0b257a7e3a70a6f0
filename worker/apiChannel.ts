/**
 * How a request for /api/v1/... reaches the one node of the origin and its answer comes back, from any context:
 * the service worker (a page's fetch), and every tab's proxy (which must not depend on the service worker). The
 * node runs in a worker of one tab; all of them meet on one BroadcastChannel, so no MessagePort has to be handed
 * from context to context, and a node that moves to another tab is found again by its announcement
 * (docs/decisions/0020-the-node-in-the-page.md).
 *
 * The protocol, per request `id`:
 *   client -> `request` (method, url, headers, body)        node -> `accepted` (its node id)
 *   node -> `head` (status, headers), `chunk`s, `end`         client -> `cancel` when it stops reading
 * or, to a client that says it takes one (`whole`), an answer that is not a stream as one `response` (status,
 * headers, body). `accepted` comes first whatever the answer: a client that knows its node hears that node's `gone`,
 * and never sends a write again to the next one. And, for the whole channel: `ready` when a node starts serving (requests not yet accepted are sent again; a read also each second until accepted),
 * `alive` every second while a node has requests in flight, `gone` when it stops. A client whose node goes
 * silent answers 503 (a GET is sent again to the next node: reading twice is harmless).
 *
 * Each context opens the channel once and keeps it (a BroadcastChannel costs about a millisecond to open and close
 * in Chromium, and every open one hears every message of the origin): requests and their answers are told apart by
 * `id` (issue 19's trace of the service worker).
 */
import type { ErrorCode } from '../src/api/errorCodes.ts'

export const API_CHANNEL = 'sluice:api'

type Headers = [string, string][]

export type ApiChannelMessage =
  | { kind: 'request'; id: string; method: string; url: string; headers: Headers; body: ArrayBuffer | null; whole?: boolean }
  | { kind: 'accepted'; id: string; node: string }
  | { kind: 'response'; id: string; node: string; status: number; headers: Headers; body: ArrayBuffer | null }
  | { kind: 'head'; id: string; node: string; status: number; headers: Headers }
  | { kind: 'chunk'; id: string; node: string; bytes: Uint8Array }
  | { kind: 'end'; id: string; node: string; error?: string }
  | { kind: 'cancel'; id: string }
  | { kind: 'ready'; node: string }
  | { kind: 'alive'; node: string }
  | { kind: 'gone'; node: string }

/** Milliseconds between a busy node's `alive` messages, and how long a client waits without one. */
export const ALIVE_EVERY_MS = 1_000
export const SILENT_AFTER_MS = 5_000
/** Milliseconds between sends of a GET or HEAD that no node has accepted yet. */
export const RESEND_UNACCEPTED_MS = 1_000

// ---- the node's side ------------------------------------------------------------------------------------------

export type ServeApiChannelParameters = {
  /** Answers a request (the node's REST API: hostNode's fetch). */
  fetch(request: Request): Promise<Response>
  /** A name for this node's run, so clients can tell it from the node before and after it. */
  node: string
  channelName?: string
}

/** Serves the REST API on the channel until `close()` (which says `gone`). */
export function serveApiChannel({ fetch, node, channelName = API_CHANNEL }: ServeApiChannelParameters): { close(): void } {
  const channel = new BroadcastChannel(channelName)
  const inFlight = new Map<string, AbortController>()
  let closed = false
  // A request still being answered when the node stops has nobody left to tell: its client hears `gone`.
  const post = (message: ApiChannelMessage) => {
    if (!closed) channel.postMessage(message)
  }
  const alive = setInterval(() => {
    if (inFlight.size > 0) post({ kind: 'alive', node })
  }, ALIVE_EVERY_MS)

  const serve = async (m: Extract<ApiChannelMessage, { kind: 'request' }>) => {
    const abort = new AbortController()
    inFlight.set(m.id, abort)
    post({ kind: 'accepted', id: m.id, node })
    try {
      const request = new Request(m.url, { method: m.method, headers: m.headers, ...(m.body ? { body: m.body } : {}), signal: abort.signal })
      const response = await fetch(request)
      if (m.whole && !response.headers.get('content-type')?.startsWith('text/event-stream')) {
        const body = response.body ? await response.arrayBuffer() : null
        if (!abort.signal.aborted) post({ kind: 'response', id: m.id, node, status: response.status, headers: [...response.headers], body })
        return
      }
      post({ kind: 'head', id: m.id, node, status: response.status, headers: [...response.headers] })
      if (response.body) {
        const reader = response.body.getReader()
        abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => {}), { once: true })
        for (;;) {
          const { done, value } = await reader.read()
          if (done || abort.signal.aborted) break
          post({ kind: 'chunk', id: m.id, node, bytes: value })
        }
      }
      post({ kind: 'end', id: m.id, node })
    } catch (error) {
      post({ kind: 'end', id: m.id, node, error: error instanceof Error ? error.message : String(error) })
    } finally {
      inFlight.delete(m.id)
    }
  }

  channel.onmessage = (event: MessageEvent<ApiChannelMessage>) => {
    const m = event.data
    if (m.kind === 'request' && !inFlight.has(m.id)) void serve(m)
    else if (m.kind === 'cancel') inFlight.get(m.id)?.abort()
  }
  post({ kind: 'ready', node })
  return {
    close() {
      clearInterval(alive)
      for (const abort of inFlight.values()) abort.abort()
      post({ kind: 'gone', node })
      closed = true
      channel.close()
    },
  }
}

// ---- the client's side ----------------------------------------------------------------------------------------

export type ForwardParameters = {
  /**
   * How long to wait for a node to accept, and whether one is starting: with `nodeStarting()` true (the
   * leader's Web Lock is held, so a node runs or is starting) the client waits up to `startTimeoutMs`,
   * otherwise `discoverMs`.
   */
  discoverMs?: number
  startTimeoutMs?: number
  nodeStarting?: () => Promise<boolean>
  channelName?: string
}

/** An answer made here, not by the node: `{"errors", "code"}` as every error of the API. */
export function errorResponse(status: number, code: ErrorCode, message: string): Response {
  return new Response(JSON.stringify({ errors: message, code }), { status, headers: { 'content-type': 'application/json' } })
}

/** This context's end of a channel, opened once: each message goes to the request its `id` names, the rest to all. */
type SharedChannel = { channel: BroadcastChannel; listeners: Map<string, (m: ApiChannelMessage) => void> }
const opened = new Map<string, SharedChannel>()

function sharedChannel(name: string): SharedChannel {
  let shared = opened.get(name)
  if (!shared) {
    const listeners = new Map<string, (m: ApiChannelMessage) => void>()
    const channel = new BroadcastChannel(name)
    channel.onmessage = (event: MessageEvent<ApiChannelMessage>) => {
      const m = event.data
      if ('id' in m) listeners.get(m.id)?.(m)
      else for (const listener of [...listeners.values()]) listener(m)
    }
    shared = { channel, listeners }
    opened.set(name, shared)
  }
  return shared
}

/**
 * Sends `request` to the origin's node and resolves with its Response (the body streamed as it comes), or with a
 * 503 when no node answers: never left pending.
 */
export async function forwardOverApiChannel(request: Request, p: ForwardParameters = {}): Promise<Response> {
  const discoverMs = p.discoverMs ?? 1_500
  const startTimeoutMs = p.startTimeoutMs ?? 30_000
  const id = crypto.randomUUID()
  const body = request.method === 'GET' || request.method === 'HEAD' ? null : await request.arrayBuffer()
  const message: ApiChannelMessage = { kind: 'request', id, method: request.method, url: request.url, headers: [...request.headers], body, whole: true }
  const retriable = request.method === 'GET' || request.method === 'HEAD'
  const { channel, listeners } = sharedChannel(p.channelName ?? API_CHANNEL)
  const started = Date.now()

  return new Promise<Response>((resolve) => {
    let node: string | undefined
    let lastHeard = 0
    let stream: ReadableStreamDefaultController<Uint8Array> | undefined
    let settled = false
    let sentAt = 0
    const send = () => {
      sentAt = Date.now()
      channel.postMessage(message)
    }
    const finish = () => {
      clearInterval(watch)
      listeners.delete(id)
    }
    const answer = (response: Response) => {
      if (settled) return
      settled = true
      resolve(response)
    }
    const fail = (status: number, code: ErrorCode, text: string) => {
      if (stream) {
        stream.error(new Error(text))
        finish()
      } else {
        answer(errorResponse(status, code, text))
        finish()
      }
    }
    const lost = (why: string) => {
      if (!stream && retriable) {
        // Reading again from the next node is harmless.
        node = undefined
        send()
        return
      }
      if (stream) {
        // Only an event stream comes in pieces (`whole`): it ends, and its reader connects again with Last-Event-ID
        // to the next node, missing nothing. An error would be a failed fetch in the service worker (Firefox logs
        // one for each) for what is the stream's normal end.
        stream.close()
        finish()
        return
      }
      fail(503, 'NODE_LOST', `the node stopped while answering this request (${why}); it may or may not have been carried out`)
    }
    request.signal.addEventListener('abort', () => {
      channel.postMessage({ kind: 'cancel', id } satisfies ApiChannelMessage)
      if (!settled) answer(errorResponse(499, 'CANCELLED', 'the request was cancelled'))
      finish()
    })

    listeners.set(id, (m) => {
      if (m.kind === 'ready' && !node) return send()
      if ('node' in m && m.node === node) lastHeard = Date.now()
      if (m.kind === 'gone' && m.node === node) return lost('it was stopped')
      if (!('id' in m) || m.id !== id) return
      if (m.kind === 'accepted' && node === undefined) {
        node = m.node
        lastHeard = Date.now()
      }
      if (m.kind === 'accepted') return
      if (!('node' in m) || m.node !== node) return
      if (m.kind === 'response') {
        answer(new Response(m.status === 204 || m.status === 304 ? null : m.body, { status: m.status, headers: m.headers }))
        finish()
      } else if (m.kind === 'head') {
        const readable = new ReadableStream<Uint8Array>({
          start: (controller) => {
            stream = controller
          },
          cancel: () => {
            channel.postMessage({ kind: 'cancel', id } satisfies ApiChannelMessage)
            finish()
          },
        })
        answer(new Response(m.status === 204 || m.status === 304 ? null : readable, { status: m.status, headers: m.headers }))
      } else if (m.kind === 'chunk') stream?.enqueue(m.bytes)
      else if (m.kind === 'end') {
        if (m.error) return fail(500, 'INTERNAL', m.error)
        stream?.close()
        finish()
      }
    })

    let starting: boolean | undefined
    const watch = setInterval(async () => {
      const now = Date.now()
      if (node !== undefined) {
        if (now - lastHeard > SILENT_AFTER_MS) lost('it went silent')
        return
      }
      // A read not yet accepted is asked again each second: a node that came up without this context hearing its
      // `ready` (a message lost, a worker replaced meanwhile) still gets it. A write waits for `ready`: sent twice,
      // a node that took the first without its `accepted` arriving yet would carry it out twice.
      if (retriable && now - sentAt >= RESEND_UNACCEPTED_MS) send()
      if (now - started < discoverMs) return
      starting ??= (await p.nodeStarting?.()) ?? false
      if (!starting || now - started > startTimeoutMs)
        fail(
          503,
          'NO_NODE',
          starting ? `no Sluice node answered within ${startTimeoutMs} ms` : 'no Sluice node runs in this origin: call startNode() in a page first',
        )
    }, 250)
    send()
  })
}
