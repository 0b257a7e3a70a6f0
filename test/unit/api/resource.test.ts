import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { ApiError, errorAnswer } from '../../../src/api/errors.ts'
import { integer, optional } from '../../../src/api/fields.ts'
import { endpoint, json, Resources } from '../../../src/api/resource.ts'

const A = '0x5B38Da6a701c568545dCfcB03FcB875f56beddC4'

describe('Resources', () => {
  const served = (status: { ready: boolean }) => {
    const handled: string[] = []
    const resources = new Resources()
    resources.add('/things/:thing_address', {
      GET: endpoint({
        doc: { summary: 'get', query: { limit: optional(integer({ rangeStatus: 400 })) }, responses: { 200: 'ok' } },
        handler: (c) => {
          handled.push('GET')
          return json(c, { limit: c.req.valid('query').limit ?? null })
        },
      }),
      PUT: endpoint({
        doc: { summary: 'put', body: { amount: integer({ min: 1n }) }, responses: { 200: 'ok' } },
        handler: (c) => {
          handled.push('PUT')
          return json(c, { amount: c.req.valid('json').amount })
        },
      }),
    })
    const app = new Hono()
    resources.mount(app, () => {
      if (!status.ready) throw new ApiError(503, 'syncing')
    })
    app.onError((error) => errorAnswer(error as ApiError))
    return { app, handled }
  }
  const put = (app: Hono, path: string, body: string) => app.request(path, { method: 'PUT', body, headers: { 'content-type': 'application/json' } })

  it("validates a route's body and query, from its doc, before its handler, which reads them typed", async () => {
    const { app, handled } = served({ ready: true })
    expect(await (await put(app, `/things/${A}`, '{"amount": "7"}')).json()).toEqual({ amount: '7' })
    expect(await (await app.request(`/things/${A}?limit=3`)).json()).toEqual({ limit: '3' })
    const bad = await put(app, `/things/${A}`, '{"amount": 0}')
    expect([bad.status, (await bad.json()).errors]).toEqual([409, 'amount: must be at least 1'])
    expect((await app.request(`/things/${A}?limit=-1`)).status).toBe(400)
    expect(handled).toEqual(['PUT', 'GET'])
  })

  it('checks the path address, then the method, then the status, and only then the input', async () => {
    const syncing = served({ ready: false })
    expect((await put(syncing.app, `/things/${A.toLowerCase()}`, '{}')).status).toBe(404)
    const post = await syncing.app.request(`/things/${A}`, { method: 'POST' })
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, PUT'])
    expect((await put(syncing.app, `/things/${A}`, '{}')).status).toBe(503)
    expect(syncing.handled).toEqual([])
  })
})
