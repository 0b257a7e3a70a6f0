import type { MiddlewareHandler } from 'hono'
import { bearerAuth } from 'hono/bearer-auth'
import { cors } from 'hono/cors'
import { ApiError, errorAnswer } from './errors.ts'
import { accessDecision, type HostRules, type OriginPattern } from './hostsAndOrigins.ts'

/**
 * Who may call the API over HTTP (`sluice serve`, `sluice devnet`; docs/decisions/0025-who-may-call-the-headless-api.md).
 * A browser sends any web page's requests to 127.0.0.1 too, so: the Host must be a name this node answers to (a DNS
 * rebinding page's Host is its own name), a request a page started must come from the node's own origin or one
 * `--rpccorsdomain` allows, and with a token every request must carry it. The page's service worker has its own
 * boundary (the origin) and does not use these.
 */
export type ApiAccess = HostRules & {
  /** Origins whose pages may call the API, with CORS (`--rpccorsdomain`). */
  corsOrigins: readonly OriginPattern[]
  /** When set, every request but a CORS preflight must carry `Authorization: Bearer <token>`. */
  token?: string | undefined
}

/** The middlewares of `access`, in their order: Host, then Origin and CORS (a preflight ends there), then the token. */
export function accessChecks(access: ApiAccess): MiddlewareHandler[] {
  const corsAnswer = cors({
    // Called only for an origin accessDecision allowed.
    origin: (origin) => origin,
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowHeaders: ['Content-Type', 'Authorization', 'Last-Event-ID'],
  })
  const checks: MiddlewareHandler[] = [
    async (c, next) => {
      const decision = accessDecision({ host: c.req.header('host'), origin: c.req.header('origin'), secFetchSite: c.req.header('sec-fetch-site') }, access)
      if (decision === 'cors') return corsAnswer(c, next)
      if (decision !== 'ok') throw new ApiError(decision.status, decision.message, { code: decision.code })
      await next()
    },
  ]
  if (access.token !== undefined) {
    const unauthorized = (message: string) => () => errorAnswer(new ApiError(401, message, { code: 'UNAUTHORIZED' }))
    checks.push(
      bearerAuth({
        token: access.token,
        realm: 'sluice',
        noAuthenticationHeader: { message: unauthorized('this node needs Authorization: Bearer <the token in its --api-token-file>') },
        // Hono answers a malformed header with 400; RFC 6750 and our clients expect 401 and a challenge.
        invalidAuthenticationHeader: { message: unauthorized('the Authorization header is not Bearer <token>') },
        invalidToken: { message: unauthorized('wrong API token') },
      }),
    )
  }
  return checks
}
