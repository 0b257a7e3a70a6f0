/// <reference lib="webworker" />
/**
 * Sluice's service worker (`sluice-sw.js`, shipped as one classic script: Firefox before 147 refuses module service
 * workers). It answers every same-origin `/api/v1` request by forwarding it to the origin's node over the request
 * channel (apiChannel.ts), streamed bodies included, and lets everything else pass through untouched. It keeps no
 * state between requests, so the browser stopping it while idle costs nothing (docs/decisions/0020).
 */
import { errorResponse, forwardOverApiChannel } from './apiChannel.ts'
import { API_PATH, LEADER_LOCK } from './names.ts'

declare const self: ServiceWorkerGlobalScope

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
  event.respondWith(
    forwardOverApiChannel(event.request, { nodeStarting }).catch((error: unknown) =>
      errorResponse(503, 'UNAVAILABLE', `the service worker could not reach the node: ${error instanceof Error ? error.message : String(error)}`),
    ),
  )
})

export function isApiPath(pathname: string): boolean {
  return pathname === API_PATH || pathname.startsWith(`${API_PATH}/`)
}

/** A node runs or is starting when some tab holds (or waits for) the leader's Web Lock. */
async function nodeStarting(): Promise<boolean> {
  const { held = [] } = await navigator.locks.query()
  return held.some((lock) => lock.name === LEADER_LOCK)
}
