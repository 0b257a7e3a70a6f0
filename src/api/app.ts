import { Hono } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { accessChecks, type ApiAccess } from './access.ts'
import type { ApiContext, ApiContextRef } from './context.ts'
import type { SluiceNode } from '../node/sluiceNode.ts'
import { EventLog } from './eventLog.ts'
import { ApiError, errorAnswer, toApiError } from './errors.ts'
import { checkBodyMediaType } from './input.ts'
import { Resources } from './resource.ts'
import { nodeRoutes } from './routes/node.ts'
import { channelsRoutes } from './routes/channels.ts'
import { tokensRoutes } from './routes/tokens.ts'
import { paymentsRoutes } from './routes/payments.ts'
import { pendingTransfersRoutes } from './routes/pendingTransfers.ts'
import { debugRoutes } from './routes/debug.ts'
import { userDepositRoutes } from './routes/userDeposit.ts'
import { testingRoutes } from './routes/testing.ts'
import { connectionsRoutes } from './routes/connections.ts'
import { notificationsRoutes } from './routes/notifications.ts'
import { monitoringRoutes } from './routes/monitoring.ts'
import { eventsRoutes, logNodeEvents } from './routes/events.ts'
import { stateRoutes } from './routes/state.ts'
import { openapiRoutes } from './routes/openapi.ts'

export const API_BASE_PATH = '/api/v1'

/**
 * Paths answered while the node syncs (the rest is 503 until it is ready). /version is static, and a page checks
 * it before anything else: the node it reached must be of its own build (worker/host.ts).
 */
export const ANSWERED_WHILE_SYNCING: ReadonlySet<string> = new Set(['/status', '/version', '/openapi.json', '/events'])

export type Api = {
  /** The Hono app; its routes start with /api/v1. */
  app: Hono
  resources: Resources
  /** The push events GET /events streams, logged from the API's creation on. */
  events: EventLog
  /** From now on every request is 503 (shutdown in progress). */
  shuttingDown(): void
}

export type CreateApiParameters = Omit<ApiContext, 'client' | 'services' | 'basePath' | 'closing' | 'events' | 'tokenRequired'> & {
  /** The node the API answers for: the routes see its client and its services. */
  node: Pick<SluiceNode, 'client' | 'services'>
  /** Who may call, checked before anything else: given when served over HTTP (src/api/access.ts). */
  access?: ApiAccess
  /** How many push events are kept for clients that reconnect (default DEFAULT_EVENT_LOG_CAPACITY). */
  eventLogCapacity?: number
  /**
   * Called once after a request failed with an error nothing maps to a status (a bug): the API then answers
   * 503 to everything, so no further request acts on a state that may be wrong; the owner should stop the node.
   */
  onInternalError?(error: unknown): void
}

/** Every route of the API into `resources`; the handlers read `ctx` when a request comes, none when it registers. */
export function registerRoutes(resources: Resources, ctx: ApiContextRef): void {
  for (const routes of [
    nodeRoutes,
    channelsRoutes,
    tokensRoutes,
    paymentsRoutes,
    pendingTransfersRoutes,
    debugRoutes,
    userDepositRoutes,
    testingRoutes,
    connectionsRoutes,
    notificationsRoutes,
    monitoringRoutes,
    eventsRoutes,
    stateRoutes,
    openapiRoutes,
  ])
    routes(resources, ctx)
}

/** Builds the REST API (docs/rest-api.md) for one node. Serve `app.fetch` (Node HTTP server, service worker). */
export function createApi({ node, onInternalError, eventLogCapacity, access, ...context }: CreateApiParameters): Api {
  const closing = new AbortController()
  const events = new EventLog(eventLogCapacity ? { capacity: eventLogCapacity } : {})
  const ctx: ApiContext = {
    ...context,
    client: node.client,
    services: node.services,
    basePath: API_BASE_PATH,
    closing: closing.signal,
    events,
    tokenRequired: access?.token !== undefined,
  }
  const resources = new Resources()
  registerRoutes(resources, () => ctx)
  logNodeEvents(events, node.client, closing.signal)

  let closed: string | undefined
  const app = new Hono({ strict: true }).basePath(API_BASE_PATH)
  // Who may call (Host, Origin, token), then what they may send, then the rest: nothing runs for a refused request.
  for (const check of access ? accessChecks(access) : []) app.use(check)
  app.use(async (c, next) => {
    await checkBodyMediaType(c.req.raw)
    await next()
  })
  app.use(async (_c, next) => {
    if (closed) throw new ApiError(503, closed)
    await next()
  })
  resources.mount(app, (_c, path) => {
    const status = ctx.client.status
    if (status.status !== 'ready' && !ANSWERED_WHILE_SYNCING.has(path)) {
      const progress = status.status === 'syncing' ? ` (syncing, ${status.blocksToSync} blocks to go)` : ''
      throw new ApiError(503, `Service unavailable. Try again later.${progress}`)
    }
  })
  app.notFound(() => errorAnswer(new ApiError(404, 'invalid endpoint')))
  app.onError((error) => {
    const known = toApiError(error)
    if (known) return errorAnswer(known)
    // A refusal a middleware throws on purpose (bearerAuth's 401) answers itself; it is no bug.
    if (error instanceof HTTPException)
      return error.res ? error.getResponse() : errorAnswer(new ApiError(error.status as ContentfulStatusCode, error.message || `HTTP ${error.status}`))
    if (!closed) {
      closed = 'The API stopped after an internal error; restart the node'
      closing.abort()
      onInternalError?.(error)
    }
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error)
    return errorAnswer(new ApiError(500, `internal error: ${message}`))
  })
  return {
    app,
    resources,
    events,
    shuttingDown: () => {
      closed ??= 'The API is shutting down'
      closing.abort()
    },
  }
}
