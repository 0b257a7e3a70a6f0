// What each step of a request through a service worker costs in Chromium, one step added at a time, each a page and
// a service worker of its own on one static origin (no node, no package): the floor (the worker answers at once),
// the same after looking up the request's client (`clients.get`, which ours does to refuse other sites), and the
// answer fetched from a dedicated worker of the page over a BroadcastChannel (the request channel's way,
// worker/apiChannel.ts: an `accepted` and then a `response`, or the `response` alone) or over a MessagePort the page
// hands to the service worker. Sequential POSTs with a small JSON body, as a payment is.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { chromium } from 'playwright-core'
import { CHROMIUM_ARGS } from '../test/support/engines/engine.ts'
import { fmt, percentile } from './measure.ts'

const WARM_UP = 100
const TIMED = 500

/** The dedicated worker: answers every request it hears, on the channel and on any port it is given. */
const ECHO_WORKER = `
const answer = (m) => ({ kind: 'response', id: m.id, node: 'n', status: 200, headers: [['content-type', 'application/json']], body: new TextEncoder().encode('{"ok":true}').buffer })
const channel = new BroadcastChannel('hops-' + self.location.search.slice(1))
channel.onmessage = (e) => {
  const m = e.data
  if (m.kind !== 'request') return
  if (m.accepted) channel.postMessage({ kind: 'accepted', id: m.id, node: 'n' })
  channel.postMessage(answer(m))
}
self.onmessage = (e) => {
  const port = e.data.port
  port.onmessage = (p) => port.postMessage(answer(p.data))
}`

/** One service worker per variant, each at its own scope: `/<variant>/`. */
const SERVICE_WORKER = `
const variant = new URL(self.registration.scope).pathname.split('/')[1]
self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()))
const channel = variant.startsWith('channel') ? new BroadcastChannel('hops-' + variant) : undefined
const waiting = new Map()
if (channel) channel.onmessage = (e) => {
  const m = e.data
  if (m.kind === 'response') waiting.get(m.id)?.(m)
}
let port
const portWaiting = new Map()
self.addEventListener('message', (e) => {
  if (e.data?.type !== 'port') return
  port = e.data.port
  port.onmessage = (p) => portWaiting.get(p.data.id)?.(p.data)
})
const json = (body, status = 200) => new Response(body, { status, headers: { 'content-type': 'application/json' } })
async function answer(event) {
  if (variant === 'floor') return json('{"ok":true}')
  if (variant === 'clients') {
    const client = await self.clients.get(event.clientId)
    return json(client && new URL(client.url).origin === self.location.origin ? '{"ok":true}' : '{}', client ? 200 : 403)
  }
  const id = crypto.randomUUID()
  const body = await event.request.arrayBuffer()
  const message = { kind: 'request', id, method: event.request.method, url: event.request.url, headers: [...event.request.headers], body, accepted: variant === 'channel-accepted' }
  const m = await new Promise((resolve) => {
    if (variant === 'port') {
      portWaiting.set(id, resolve)
      port.postMessage(message)
    } else {
      waiting.set(id, resolve)
      channel.postMessage(message)
    }
  })
  waiting.delete(id)
  portWaiting.delete(id)
  return new Response(m.body, { status: m.status, headers: m.headers })
}
self.addEventListener('fetch', (e) => {
  if (new URL(e.request.url).pathname.endsWith('/answer')) e.respondWith(answer(e))
})`

/**
 * In a page's script: `once` awaited `warmUp` times, then `n` times timed one after another (ms each). Shared by the
 * pages that time a service worker (this one, and bench/browser.ts's floor).
 */
export const TIMED_IN_SEQUENCE = `async function timedInSequence(once, warmUp, n) {
  for (let i = 0; i < warmUp; i++) await once()
  const latencies = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await once()
    latencies.push(performance.now() - t0)
  }
  return latencies
}`

const PAGE = `<!doctype html><html><body><script>
window.hops = async (variant, warmUp, n) => {
  const registration = await navigator.serviceWorker.register('/sw.js', { scope: '/' + variant + '/' })
  await navigator.serviceWorker.ready
  while (!navigator.serviceWorker.controller) await new Promise((r) => setTimeout(r, 10))
  const worker = new Worker('/echo.js?' + variant)
  if (variant === 'port') {
    const { port1, port2 } = new MessageChannel()
    worker.postMessage({ port: port1 }, [port1])
    navigator.serviceWorker.controller.postMessage({ type: 'port', port: port2 }, [port2])
  }
  // The worker's channel is open once it answers (its first message handler is set up).
  await new Promise((r) => setTimeout(r, 200))
  const once = () => fetch('/' + variant + '/answer', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":"1","identifier":"1"}' }).then((r) => r.json())
  const latencies = await timedInSequence(once, warmUp, n)
  worker.terminate()
  return latencies
}
${TIMED_IN_SEQUENCE}
</script></body></html>`

const VARIANTS = {
  floor: 'the floor: the service worker answers at once with a constant',
  clients: 'the same after clients.get(event.clientId) (the origin check)',
  'channel-accepted': "answered by a dedicated worker over a BroadcastChannel, `accepted` then `response` (the request channel's way)",
  channel: 'the same, the `response` alone',
  port: 'answered by the dedicated worker over a MessagePort the page handed to the service worker',
} as const

async function serve(): Promise<{ server: Server; url: string }> {
  const files: Record<string, [string, string]> = {
    '/sw.js': [SERVICE_WORKER, 'text/javascript'],
    '/echo.js': [ECHO_WORKER, 'text/javascript'],
  }
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname
    const [body, type] = files[path] ?? [PAGE, 'text/html']
    response.writeHead(200, { 'content-type': type, 'service-worker-allowed': '/' })
    response.end(body)
  })
  server.listen(0, '127.0.0.1')
  await new Promise((r) => server.once('listening', r))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

export async function benchServiceWorkerHops(): Promise<Record<string, string>> {
  const { server, url } = await serve()
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS })
  try {
    const rows: Record<string, string> = {}
    let floor = 0
    for (const [variant, label] of Object.entries(VARIANTS)) {
      const page = await browser.newPage()
      await page.goto(`${url}/${variant}/`)
      const latencies = await page.evaluate(
        ([v, w, n]) => (window as unknown as { hops: (v: string, w: number, n: number) => Promise<number[]> }).hops(v, w, n),
        [variant, WARM_UP, TIMED] as const,
      )
      await page.close()
      const p50 = percentile(latencies, 50)
      if (variant === 'floor') floor = p50
      rows[`${label}, p50 / p99 (ms)${variant === 'floor' ? '' : ', over the floor'}`] =
        `${fmt(p50)} / ${fmt(percentile(latencies, 99))}${variant === 'floor' ? '' : `; +${fmt(p50 - floor)}`}`
    }
    return rows
  } finally {
    await browser.close()
    server.close()
  }
}
