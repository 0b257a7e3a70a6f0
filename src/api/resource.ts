import type { Context, Hono, MiddlewareHandler } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { stringify } from './bigintJson.ts'
import { ApiError } from './errors.ts'
import type { Parsed, Shape } from './fields.ts'
import { jsonBody, pathAddress, queryOf } from './input.ts'
import type { Schema } from './schema.ts'
import type { GenericSchema } from 'valibot'

export type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE'

/** How a route is documented in openapi.json: the body and query shapes are the ones validated before its handler. */
export type RouteDoc = {
  summary: string
  description?: string
  body?: Shape
  /** The body holds exactly one of these fields (PATCH /channels, POST /user_deposit). */
  bodyOneOf?: boolean
  query?: Shape
  /** Status -> what it means here; the schema of the success answer goes in `schema` (valibot's, or JSON Schema as written). */
  responses: Partial<Record<number, string>>
  schema?: Schema | GenericSchema
  /** Media type of the success answer; application/json unless said (text/event-stream for /events). */
  contentType?: string
}

// biome-ignore lint/suspicious/noExplicitAny: a route's handler may read any validated input (endpoint types it).
export type Handler = (c: Context<any, string, any>) => Promise<Response> | Response
export type Endpoint = { doc: RouteDoc; handler: Handler }
export type Route = Endpoint & { method: Method; path: string }

/** What a handler reads validated: `c.req.valid('json')` when its doc has a body, `c.req.valid('query')` when it has a query. */
type Valid<B, Q> = { out: (B extends Shape ? { json: Parsed<B> } : Record<never, never>) & (Q extends Shape ? { query: Parsed<Q> } : Record<never, never>) }

/** An endpoint whose handler reads its body and query typed, validated from the shapes of its doc (Resources.mount). */
export function endpoint<const B extends Shape | undefined = undefined, const Q extends Shape | undefined = undefined>(e: {
  doc: RouteDoc & { body?: B; query?: Q }
  // biome-ignore lint/suspicious/noExplicitAny: the app's Env and the path's parameters are not typed here.
  handler: (c: Context<any, string, Valid<B, Q>>) => Promise<Response> | Response
}): Endpoint {
  return e as Endpoint
}

/** The validators of a route's input, from its doc: hono middleware, run after the path, method and status checks. */
function validators({ doc }: Endpoint): MiddlewareHandler[] {
  return [...(doc.query ? [queryOf(doc.query)] : []), ...(doc.body ? [jsonBody(doc.body)] : [])] as MiddlewareHandler[]
}
const next = async () => {}

/**
 * The routes of the API, grouped by path: a method not served on a known path is 405 with an Allow header;
 * path parameters named `*_address` must be EIP-55 (else 404, checked before the method, as Raiden does).
 */
export class Resources {
  readonly routes: Route[] = []

  add(path: string, methods: Partial<Record<Method, Endpoint>>): void {
    for (const [method, route] of Object.entries(methods)) this.routes.push({ method: method as Method, path, ...route })
  }

  mount(app: Hono, gate: (c: Context, path: string) => void): void {
    const byPath = new Map<string, Route[]>()
    for (const route of this.routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route])
    for (const [path, routes] of byPath) {
      const allow = routes.map((r) => r.method).join(', ')
      const checks = new Map(routes.map((r) => [r, validators(r)]))
      app.all(path, async (c) => {
        for (const [name, value] of Object.entries(c.req.param() as Record<string, string>)) if (name.endsWith('_address')) pathAddress(value, name)
        const route = routes.find((r) => r.method === c.req.method || (c.req.method === 'HEAD' && r.method === 'GET'))
        if (!route) throw new ApiError(405, `method ${c.req.method} is not allowed here; allowed: ${allow}`, { headers: { Allow: allow } })
        gate(c, path)
        for (const check of checks.get(route)!) await check(c, next)
        return route.handler(c)
      })
    }
  }
}

/** A JSON answer whose bigint values are written as decimal strings. */
export function json(c: Context, value: unknown, status: ContentfulStatusCode = 200): Response {
  return c.body(stringify(value), status, { 'content-type': 'application/json' })
}
