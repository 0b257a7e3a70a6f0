import type { Context, Hono } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { ApiError } from './errors.ts'
import { pathAddress, type Schema, type Shape } from './input.ts'

export type Method = 'GET' | 'PUT' | 'POST' | 'PATCH' | 'DELETE'

/** How a route is documented in openapi.json: the body and query shapes are the ones the handler parses. */
export type RouteDoc = {
  summary: string
  description?: string
  body?: Shape
  /** The body holds exactly one of these fields (PATCH /channels, POST /user_deposit). */
  bodyOneOf?: boolean
  query?: Shape
  /** Status -> what it means here; the schema of the success answer goes in `schema`. */
  responses: Partial<Record<number, string>>
  schema?: Schema
  /** Media type of the success answer; application/json unless said (text/event-stream for /events). */
  contentType?: string
}

export type Route = { method: Method; path: string; doc: RouteDoc; handler: (c: Context) => Promise<Response> | Response }

/**
 * The routes of the API, grouped by path: a method not served on a known path is 405 with an Allow header;
 * path parameters named `*_address` must be EIP-55 (else 404, checked before the method, as Raiden does).
 */
export class Resources {
  readonly routes: Route[] = []

  add(path: string, methods: Partial<Record<Method, { doc: RouteDoc; handler: Route['handler'] }>>): void {
    for (const [method, route] of Object.entries(methods)) this.routes.push({ method: method as Method, path, ...route })
  }

  mount(app: Hono, gate: (c: Context, path: string) => void): void {
    const byPath = new Map<string, Route[]>()
    for (const route of this.routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route])
    for (const [path, routes] of byPath) {
      const allow = routes.map((r) => r.method).join(', ')
      app.all(path, async (c) => {
        for (const [name, value] of Object.entries(c.req.param() as Record<string, string>)) if (name.endsWith('_address')) pathAddress(value, name)
        const route = routes.find((r) => r.method === c.req.method || (c.req.method === 'HEAD' && r.method === 'GET'))
        if (!route) throw new ApiError(405, `method ${c.req.method} is not allowed here; allowed: ${allow}`, { headers: { Allow: allow } })
        gate(c, path)
        return route.handler(c)
      })
    }
  }
}

/** A JSON answer whose bigint values are written as decimal strings. */
export function json(c: Context, value: unknown, status: ContentfulStatusCode = 200): Response {
  return c.body(stringify(value), status, { 'content-type': 'application/json' })
}

export function stringify(value: unknown): string {
  return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v))
}
