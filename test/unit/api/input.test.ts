import fc from 'fast-check'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { errorAnswer, type ApiError } from '../../../src/api/errors.ts'
import { integer, optional, text } from '../../../src/api/fields.ts'
import { checkBodyMediaType, isJsonMediaType, jsonBody, queryOf } from '../../../src/api/input.ts'

const anyCase = (text: string) =>
  fc.array(fc.boolean(), { minLength: text.length, maxLength: text.length }).map((up) => [...text].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''))
const token = fc.stringMatching(/^[a-z0-9!#$&^_.+-]{1,12}$/)
const ows = fc.constantFrom('', ' ', '  ', '\t')
/** `; name=value` parameters, with optional whitespace around the semicolons. */
const parameters = fc
  .array(
    fc.tuple(
      ows,
      token,
      fc.oneof(
        token,
        token.map((t) => `"${t} x"`),
      ),
    ),
    { maxLength: 3 },
  )
  .map((ps) => ps.map(([space, name, value]) => `${space};${space}${name}=${value}`).join(''))
/** A media type other than application/json: random, or one that looks like it. */
const otherType = fc
  .oneof(
    fc.tuple(token, token).map(([type, subtype]) => `${type}/${subtype}`),
    fc.constantFrom(
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'application/jsonx',
      'application/json-seq',
      'application/vnd.api+json',
      'xapplication/json',
      'application/json, text/plain',
      'application',
      '',
    ),
  )
  .filter((t) => t.toLowerCase() !== 'application/json')

describe('the body must be JSON (415)', () => {
  it("application/json in any case, with any parameters, is JSON's media type; nothing else is", () => {
    fc.assert(
      fc.property(anyCase('application/json'), ows, parameters, (type, space, params) => {
        expect(isJsonMediaType(`${type}${space}${params}`)).toBe(true)
      }),
    )
    fc.assert(
      fc.property(otherType.chain(anyCase), parameters, (type, params) => {
        expect(isJsonMediaType(`${type}${params}`)).toBe(false)
      }),
    )
    expect(isJsonMediaType('text/plain; application/json')).toBe(false)
  })

  it('refuses a request with another Content-Type, or with a body and none; passes JSON, and no body without a type', async () => {
    const method = fc.constantFrom('POST', 'PUT', 'PATCH', 'DELETE')
    const body = fc.option(fc.uint8Array({ maxLength: 20 }), { nil: undefined })
    await fc.assert(
      fc.asyncProperty(
        method,
        fc.option(fc.oneof(anyCase('application/json'), otherType), { nil: undefined }),
        parameters,
        body,
        async (m, type, params, bytes) => {
          // A Request built in a browser (the page's worker) announces no Content-Length: the body itself is looked at.
          const request = new Request('http://127.0.0.1/api/v1/x', {
            method: m,
            headers: type === undefined ? {} : { 'content-type': `${type}${params}` },
            ...(bytes ? { body: bytes } : {}),
          })
          const refused = type === undefined ? (bytes?.length ?? 0) > 0 : type.toLowerCase() !== 'application/json'
          const outcome = await checkBodyMediaType(request).then(
            () => 'passed',
            (e: unknown) => e,
          )
          if (refused) expect(outcome).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' })
          else expect(outcome).toBe('passed')
          // The route can still read the body after the check.
          if (!refused && bytes) expect(new Uint8Array(await request.arrayBuffer())).toEqual(bytes)
        },
      ),
    )
  })

  it('GET and HEAD are never refused; a Content-Length of 0 is no body', async () => {
    await expect(checkBodyMediaType(new Request('http://x/', { method: 'GET', headers: { 'content-type': 'text/plain' } }))).resolves.toBeUndefined()
    const announced = new Request('http://x/', { method: 'POST', headers: { 'content-length': '0' } })
    await expect(checkBodyMediaType(announced)).resolves.toBeUndefined()
  })
})

describe('validators of a route (hono middleware)', () => {
  const app = () => {
    const shape = { amount: integer({ min: 1n }), memo: optional(text({ maxLength: 8 })) }
    const hono = new Hono()
    hono.post('/body', jsonBody(shape), (c) => {
      const { amount, memo } = c.req.valid('json')
      return c.json({ amount: amount.toString(), memo: memo ?? null })
    })
    hono.get('/query', queryOf(shape), (c) => c.json({ amount: c.req.valid('query').amount.toString() }))
    hono.onError((error) => errorAnswer(error as ApiError))
    return hono
  }
  const post = (body: string) => app().request('/body', { method: 'POST', body, headers: { 'content-type': 'application/json' } })

  it('give the handler the body read losslessly, and answer a bad one before the handler with the field error', async () => {
    const big = (2n ** 255n + 1n).toString()
    expect(await (await post(`{"amount": ${big}, "memo": null}`)).json()).toEqual({ amount: big, memo: null })
    const refused = [
      ['', 400, 'JSON payload expected'],
      ['{}', 400, 'JSON payload expected'],
      ['[1]', 400, 'JSON payload expected: the body must be a JSON object'],
      ['{"amount": 1,}', 400, /^malformed JSON: /],
      ['{"amount": 0}', 409, 'amount: must be at least 1'],
      ['{"amount": 1, "memo": "123456789"}', 400, 'memo: longer than 8 characters'],
      ['{"amount": 1, "x": 1}', 400, 'x: unknown field'],
    ] as const
    for (const [body, status, message] of refused) {
      const r = await post(body)
      expect(r.status, body).toBe(status)
      expect((await r.json()).errors, body).toMatch(message)
    }
  })

  it('read the query from the URL: a parameter given twice is 400', async () => {
    const get = (query: string) => app().request(`/query${query}`)
    expect(await (await get('?amount=5')).json()).toEqual({ amount: '5' })
    const twice = await get('?amount=5&amount=6')
    expect(twice.status).toBe(400)
    expect((await twice.json()).errors).toBe('amount: given more than once')
    expect((await (await get('?amount=5&x=1')).json()).errors).toBe('x: unknown field')
    expect((await get('')).status).toBe(400)
  })
})
