/**
 * Whether a request for /api/v1 comes from the dApp's own origin, told by what a service worker can see: Chromium
 * shows it neither `Sec-Fetch-Site` nor `Origin` (docs/decisions/0026-service-worker-refuses-other-sites.md has the
 * table of what it sees for each way another site can send one).
 *
 * - A request that is not a navigation (fetch, EventSource, sendBeacon, an image) is answered only when its client
 *   is a page or worker of this origin. Another site's pages are not this worker's clients, so their requests go to
 *   the network and never come here; the check holds even if a browser ever sent one.
 * - A navigation is answered only when it is a top-level GET (a form POST, from anywhere, is a write the user did
 *   not ask the dApp for; a frame, object or embed is refused) and either its referrer is of this origin (a link or
 *   `window.open` of the dApp's own pages) or it has no referrer under a policy that would have shown another
 *   origin's (an address typed or a bookmark). A page of another origin gives its own as the referrer, and the
 *   policies that hide it (`no-referrer`, `same-origin`) are refused. What this cannot tell apart from a typed
 *   address: a GET from a document with no origin to show (a sandboxed or `data:` frame's popup, a `blob:` page).
 *   It is a read whose answer the initiator cannot see (the decision says why that is harmless).
 */

/** What the service worker reads off a request (the FetchEvent's `request`). */
export type SeenRequest = Pick<Request, 'mode' | 'method' | 'destination' | 'referrer' | 'referrerPolicy'>

/**
 * The referrer policies under which a navigation started by a page of another origin carries that origin as its
 * referrer (the downgrade they strip, https to http, cannot reach a service worker: its origin is secure). Any other,
 * today `no-referrer` and `same-origin`, or one added later, hides it.
 */
const SHOWS_OTHER_ORIGINS = new Set<ReferrerPolicy>([
  '',
  'strict-origin-when-cross-origin',
  'strict-origin',
  'origin',
  'origin-when-cross-origin',
  'no-referrer-when-downgrade',
  'unsafe-url',
])

/** Why a navigation to /api/v1 is refused, or undefined when it is answered. */
export function navigationRefusal(request: SeenRequest, ownOrigin: string): string | undefined {
  if (request.method !== 'GET')
    return `a ${request.method} navigation (a form posted to the API) is refused: call the API with fetch() from the dApp's own pages`
  if (request.destination !== 'document') return `the API is not answered inside a frame, object or embed (destination ${request.destination})`
  if (request.referrer === '') {
    return SHOWS_OTHER_ORIGINS.has(request.referrerPolicy)
      ? undefined
      : `a navigation that hides where it comes from (referrer policy ${request.referrerPolicy}) is refused`
  }
  const from = originOf(request.referrer)
  return from === ownOrigin ? undefined : `a navigation started by another origin (${from ?? 'unknown'}) is refused`
}

/**
 * Why a request to /api/v1 is refused, or undefined when it is answered. `clientUrl` is the URL of the request's
 * client (`clients.get(event.clientId)`), undefined when it has none this worker can see; a navigation does not
 * use it (its client is the document it leaves, of any origin, or none).
 */
export function refusal(request: SeenRequest, ownOrigin: string, clientUrl: string | undefined): string | undefined {
  if (request.mode === 'navigate') return navigationRefusal(request, ownOrigin)
  if (clientUrl !== undefined && originOf(clientUrl) === ownOrigin) return undefined
  return 'the API answers only pages and workers of its own origin'
}

/** The origin of a URL (a `blob:` URL's is its creator's), or undefined for one that does not parse. */
function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin
  } catch {
    return undefined
  }
}
