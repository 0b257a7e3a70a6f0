// The demo's own door from the page to the headless peers' and the monitoring service's REST APIs (decision 0033).
// Those APIs refuse every other origin's page (decision 0025), and the demo page is one: its calls to them go to its
// own server instead, `/peers/<n>/api/v1/...` and `/monitor/api/v1/...`, which passes them on over loopback as a
// program on the machine would. The door applies the same rules as the APIs behind it to the page's own origin (the
// static server's): a Host that is not the server's own (DNS rebinding), an Origin that is not its own, or another
// site's Sec-Fetch-Site is a 403 and nothing is sent on. Only the routes the page uses pass; the node's own API,
// /api/v1, stays the service worker's.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { accessDecision } from '../src/api/hostsAndOrigins.ts'

/** Where the APIs behind the door are: each peer's base (http://127.0.0.1:PORT/api/v1), in the page's order, and the monitoring service's. */
export type ProxyTargets = { peers: readonly string[]; monitor: string }

const ADDRESS = '0x[0-9a-fA-F]{40}'

/** What passes, by who answers it: the page's reads, a peer paying us and a peer closing its channel with us. */
const ROUTES: { to: 'peer' | 'monitor'; method: string; path: RegExp }[] = [
  { to: 'peer', method: 'GET', path: /^\/address$/ },
  { to: 'peer', method: 'GET', path: new RegExp(`^/channels(/${ADDRESS}(/${ADDRESS})?)?$`) },
  { to: 'peer', method: 'GET', path: new RegExp(`^/tokens/${ADDRESS}/network$`) },
  { to: 'peer', method: 'PATCH', path: new RegExp(`^/channels/${ADDRESS}/${ADDRESS}$`) },
  { to: 'peer', method: 'POST', path: new RegExp(`^/payments/${ADDRESS}/${ADDRESS}$`) },
  { to: 'monitor', method: 'GET', path: /^\/(status|channels|monitor_calls)$/ },
]

/** A refusal, as the APIs behind write theirs: `{"errors", "code"}`. */
export type ProxyRefusal = { status: 400 | 403 | 404 | 405; errors: string; code: string }

/**
 * What the door does with a request for `pathname` (already normalised, as `new URL` gives it): undefined when the
 * path is not the door's (the static server answers it), the URL it goes to, or why not. Pure.
 */
export function proxyTarget(method: string, pathname: string, search: string, targets: ProxyTargets): { url: string } | ProxyRefusal | undefined {
  const peer = /^\/peers\/([^/]*)\/api\/v1(\/.*)?$/.exec(pathname)
  const monitor = peer ? undefined : /^\/monitor\/api\/v1(\/.*)?$/.exec(pathname)
  if (!peer && !monitor) return undefined
  const to = peer ? 'peer' : 'monitor'
  let base = targets.monitor
  if (peer) {
    const n = /^[1-9]\d{0,3}$/.test(peer[1]!) ? Number(peer[1]) : 0
    if (n < 1 || n > targets.peers.length)
      return { status: 404, errors: `no peer ${JSON.stringify(peer[1])}: the demo runs peers 1 to ${targets.peers.length}`, code: 'NOT_FOUND' }
    base = targets.peers[n - 1]!
  }
  const route = (peer ? peer[2] : monitor![1]) ?? ''
  const routes = ROUTES.filter((r) => r.to === to && r.path.test(route))
  if (routes.length === 0)
    return { status: 404, errors: `the demo's server passes on only the routes its page uses, not ${JSON.stringify(route || '/')}`, code: 'NOT_FOUND' }
  if (!routes.some((r) => r.method === method))
    return { status: 405, errors: `${method} ${route} is not passed on (${routes.map((r) => r.method).join(', ')} is)`, code: 'METHOD_NOT_ALLOWED' }
  return { url: `${base}${route}${method === 'GET' ? search : ''}` }
}

/** Bodies the page sends are a few hundred bytes. */
const MAX_BODY = 16 * 1024
/** A close waits for its transaction to be mined: a few blocks. */
const TIMEOUT_MS = 60_000

/**
 * Answers `req` if its path is the door's (returns true), else returns false and leaves it to the static server.
 * `targets` is undefined until the network runs (a 503 that says to wait).
 */
export async function proxy(req: IncomingMessage, res: ServerResponse, targets: ProxyTargets | undefined): Promise<boolean> {
  let url: URL
  try {
    url = new URL(req.url ?? '/', 'http://localhost')
  } catch {
    return false
  }
  const method = req.method ?? 'GET'
  const send = (status: number, body: string, type = 'application/json') => {
    res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' })
    res.end(body)
  }
  const refuse = (r: { status: number; errors: string; code: string }) => send(r.status, JSON.stringify({ errors: r.errors, code: r.code }))
  const decision = proxyTarget(method, url.pathname, url.search, targets ?? { peers: [], monitor: '' })
  if (decision === undefined) return false
  // The page's own origin only: the rules of the APIs behind (decision 0025), with this server's Host and no other origin.
  const access = accessDecision(
    { host: req.headers.host, origin: req.headers.origin, secFetchSite: header(req, 'sec-fetch-site') },
    { boundHost: '127.0.0.1', port: req.socket.localPort ?? 0, hosts: [], corsOrigins: [] },
  )
  // No CORS origin is given, so no other origin is ever 'cors'.
  if (access !== 'ok') {
    refuse(
      access === 'cors'
        ? { status: 403, errors: 'another origin', code: 'FORBIDDEN_ORIGIN' }
        : { status: access.status, errors: access.message, code: access.code },
    )
    return true
  }
  if (!targets) {
    refuse({ status: 503, errors: 'the network is starting (npm run demo): try again in a moment', code: 'UNAVAILABLE' })
    return true
  }
  if ('status' in decision) {
    refuse(decision)
    return true
  }
  let body: Buffer | undefined
  if (method !== 'GET') {
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length
      if (size > MAX_BODY) {
        refuse({ status: 413, errors: `a body of more than ${MAX_BODY} bytes is not passed on`, code: 'PAYLOAD_TOO_LARGE' })
        return true
      }
      chunks.push(chunk)
    }
    body = Buffer.concat(chunks)
  }
  // Sent as a program sends it: its own Host, no Origin, no cookies, no Fetch Metadata; the body's type as the page
  // gave it, which the API behind checks (a non-JSON body is its 415).
  const type = header(req, 'content-type')
  try {
    const answer = await fetch(decision.url, {
      method,
      headers: type ? { 'content-type': type } : {},
      ...(body && body.length > 0 ? { body: new Uint8Array(body) } : {}),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    })
    send(answer.status, await answer.text(), answer.headers.get('content-type') ?? 'application/json')
  } catch (e) {
    refuse({ status: 502, errors: `${decision.url} did not answer: ${(e as Error).message}`, code: 'BAD_GATEWAY' })
  }
  return true
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}
