/// <reference lib="webworker" />
/**
 * Sluice's service worker (`sluice-sw.js`, shipped as one classic script: Firefox before 147 refuses module service
 * workers). It answers every same-origin `/api/v1` request by forwarding it to the origin's node over the request
 * channel (apiChannel.ts), streamed bodies included, and lets everything else pass through untouched. A request
 * another site sent (a form posted to the API, a link, a popup) is answered 403 `FORBIDDEN_ORIGIN` and never reaches
 * the node (ownOrigin.ts, docs/decisions/0026). It keeps no state between requests, so the browser stopping it while
 * idle costs nothing (docs/decisions/0020).
 */
import { errorResponse, forwardOverApiChannel } from './apiChannel.ts'
import { eventStreamSeconds, relayEventStream, ResumeIds } from './eventStreamRelay.ts'
import { API_PATH, LEADER_LOCK } from './names.ts'
import { refusal } from './ownOrigin.ts'

declare const self: ServiceWorkerGlobalScope

const streamSeconds = eventStreamSeconds(self.location.href)
const resumeIds = new ResumeIds()

self.addEventListener('install', () => {
  void self.skipWaiting()
})

self.addEventListener('activate', (event) => {
  event.waitUntil(self.clients.claim())
})

// A page that is not controlled (its first visit, a hard reload) asks to be claimed before its first /api/v1 call.
self.addEventListener('message', (event) => {
  if ((event.data as { type?: unknown } | null)?.type === 'sluice:claim') event.waitUntil(self.clients.claim())
})

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url)
  if (url.origin !== self.location.origin || !isApiPath(url.pathname)) return
  // Every /api/v1 request is answered here, never passed on to the static host (which would answer it with a page).
  event.respondWith(answer(event))
})

async function answer(event: FetchEvent): Promise<Response> {
  const refused = refusal(event.request, self.location.origin, await clientUrl(event))
  if (refused) return errorResponse(403, 'FORBIDDEN_ORIGIN', refused)
  return forwardOverApiChannel(withResumeId(event.request, event.clientId), { nodeStarting }).then(
    (response) => relayIfEventStream(response, event.clientId, event.request.url),
    (error: unknown) =>
      errorResponse(503, 'UNAVAILABLE', `the service worker could not reach the node: ${error instanceof Error ? error.message : String(error)}`),
  )
}

/** The URL of the page or worker that sent a request; a navigation's is not looked up (ownOrigin.ts does not use it). */
async function clientUrl(event: FetchEvent): Promise<string | undefined> {
  if (event.request.mode === 'navigate' || !event.clientId) return undefined
  return (await self.clients.get(event.clientId))?.url
}

/** A reconnection of a stream this worker ended gets the Last-Event-ID the browser kept from it (eventStreamRelay.ts). */
function withResumeId(request: Request, clientId: string): Request {
  if (!clientId || request.headers.has('last-event-id') || !request.headers.get('accept')?.includes('text/event-stream')) return request
  const id = resumeIds.take(clientId, request.url)
  if (id === undefined) return request
  const headers = new Headers(request.headers)
  headers.set('last-event-id', id)
  return new Request(request, { headers })
}

function relayIfEventStream(response: Response, clientId: string, url: string): Response {
  if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) return response
  const body = relayEventStream(response.body, {
    seconds: streamSeconds,
    // EventSource reconnects after a clean end, whether this worker or the node ended the stream.
    onEnd: (how, lastEventId) => {
      if ((how === 'cut' || how === 'ended') && clientId && lastEventId !== undefined) resumeIds.remember(clientId, url, lastEventId)
    },
  })
  const { status, statusText, headers } = response
  return new Response(body, { status, statusText, headers })
}

export function isApiPath(pathname: string): boolean {
  return pathname === API_PATH || pathname.startsWith(`${API_PATH}/`)
}

/** A node runs or is starting when some tab holds (or waits for) the leader's Web Lock. */
async function nodeStarting(): Promise<boolean> {
  const { held = [] } = await navigator.locks.query()
  return held.some((lock) => lock.name === LEADER_LOCK)
}
