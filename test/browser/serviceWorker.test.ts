// The service worker in a real Chromium: it answers /api/v1 through the request channel and passes the rest on.
import { Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import { beforeAll, describe, expect, test } from 'vitest'
import { serveApiChannel } from '../../worker/apiChannel.ts'
import { ensureControlled } from './support/serviceWorker.ts'

beforeAll(async () => {
  await ensureControlled()
}, 30_000)

/** A stand-in for the node's API, served on the real channel the service worker uses. */
function serveNodeApi() {
  const app = new Hono()
    .get('/api/v1/address', (c) => c.json({ our_address: '0x00000000000000000000000000000000000000aa' }))
    .post('/api/v1/echo', async (c) => c.json(await c.req.json(), 201))
    .get('/api/v1/events', (c) =>
      streamSSE(c, async (stream) => {
        for (let i = 1; i <= 2; i++) await stream.writeSSE({ id: String(i), data: `event ${i}` })
        while (!stream.aborted) await stream.sleep(20)
      }),
    )
    .notFound((c) => c.json({ errors: 'invalid endpoint', code: 'NOT_FOUND' }, 404))
  return serveApiChannel({ fetch: async (r) => app.fetch(r), node: crypto.randomUUID() })
}

describe('the service worker', () => {
  test('a page it controls already (a reload) is not registered again: register() waits behind the update check a navigation starts (up to 3 s)', async () => {
    const container = navigator.serviceWorker
    const registered: string[] = []
    const register = container.register.bind(container)
    container.register = (url, options) => {
      registered.push(String(url))
      return register(url, options)
    }
    try {
      const registration = await ensureControlled()
      expect(registered).toEqual([])
      expect(registration.active?.scriptURL).toBe(container.controller?.scriptURL)
    } finally {
      delete (container as { register?: unknown }).register
    }
  })

  test("a page's fetch('/api/v1/...') is answered by the node, every method and status as the node gives it", async () => {
    const node = serveNodeApi()
    try {
      const r = await fetch('/api/v1/address')
      expect(r.status).toBe(200)
      expect(await r.json()).toEqual({ our_address: '0x00000000000000000000000000000000000000aa' })
      const posted = await fetch('/api/v1/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amount: '5' }) })
      expect(posted.status).toBe(201)
      expect(await posted.json()).toEqual({ amount: '5' })
      // A 404 of the node stays the node's: it never falls through to the static host.
      const missing = await fetch('/api/v1/nowhere')
      expect(missing.status).toBe(404)
      expect(await missing.json()).toEqual({ errors: 'invalid endpoint', code: 'NOT_FOUND' })
    } finally {
      node.close()
    }
  })

  test('an event stream comes through as it is written', async () => {
    const node = serveNodeApi()
    const abort = new AbortController()
    try {
      const r = await fetch('/api/v1/events', { signal: abort.signal })
      expect(r.headers.get('content-type')).toMatch(/text\/event-stream/)
      const reader = r.body!.pipeThrough(new TextDecoderStream()).getReader()
      let text = ''
      while (!text.includes('event 2')) text += (await reader.read()).value
      expect(text).toMatch(/data: event 1\nid: 1\n\n/)
      abort.abort()
    } finally {
      node.close()
    }
  })

  test('with no node running, /api/v1 is a clear 503 in JSON; other requests pass through untouched', async () => {
    const t0 = performance.now()
    const r = await fetch('/api/v1/address')
    expect(r.status).toBe(503)
    expect(await r.json()).toMatchObject({ code: 'NO_NODE', errors: expect.stringMatching(/startNode/) })
    expect(performance.now() - t0).toBeLessThan(5_000)
    const page = await fetch(location.href)
    expect(page.status).toBe(200)
    expect(await page.text()).toMatch(/<html/i)
  })
})
