import { Hono } from 'hono'
import type pg from 'pg'
import { accessChecks } from '../api/access.ts'
import { API_BASE_PATH } from '../api/app.ts'
import { ApiError, errorAnswer } from '../api/errors.ts'
import type { Logger } from '../log/logger.ts'
import { nodeLeaseName } from '../storage/pgStorage.ts'
import { Lease } from '../storage/postgres/lease.ts'
import type { StorageIdentity } from '../storage/storage.ts'
import { checkApiExposure } from './apiExposure.ts'
import { listen, type HttpServer } from './httpServer.ts'
import { ApiPortInUseError, type ServeAccess } from './servedNode.ts'
import { hasCode } from '../errors.ts'

// Node only: `sluice serve --database` (docs/decisions/0076), the hot standby's wait for the store's lease.

/** What a standby's API answers to everything but GET /status: 503, the node is not this one. */
export const STANDBY_MESSAGE = 'This node stands by: another instance holds its store and serves it; this one takes over if that one stops answering'

/**
 * The API of a node standing by, on the address the active node's API will have once it takes over: GET /status
 * answers `{"status": "unavailable", "role": "standby"}`, every other route 503 (code STANDBY), behind the same access
 * checks as the node's API (Host, Origin, token).
 */
export async function serveStandby({ host, port, access = {} }: { host: string; port: number; access?: ServeAccess }): Promise<HttpServer> {
  checkApiExposure({ host, ...access })
  let app: Hono | undefined
  let server: HttpServer
  try {
    server = await listen((request) => app!.fetch(request), { host, port })
  } catch (e) {
    if (hasCode(e, 'ADDRESS_IN_USE')) throw new ApiPortInUseError(host, port)
    throw e
  }
  const standby = new Hono({ strict: true })
  for (const check of accessChecks({
    boundHost: host,
    port: server.port,
    hosts: access.hosts ?? [],
    corsOrigins: access.corsOrigins ?? [],
    token: access.token,
  }))
    standby.use(check)
  standby.get(`${API_BASE_PATH}/status`, (c) => c.json({ status: 'unavailable', role: 'standby' }))
  standby.all(`${API_BASE_PATH}/*`, () => errorAnswer(new ApiError(503, STANDBY_MESSAGE, { code: 'STANDBY' })))
  standby.notFound(() => errorAnswer(new ApiError(404, 'invalid endpoint')))
  standby.onError((error) => errorAnswer(error instanceof ApiError ? error : new ApiError(500, 'internal error')))
  app = standby
  return server
}

export type TakeStoreParameters = {
  pool: pg.Pool
  identity: StorageIdentity
  /** How long the lease lasts without a renewal: the standby takes over at most this long after the active one died. */
  durationMs: number
  /** Where the standby's API listens meanwhile (the node's own address). */
  api: { host: string; port: number; access: ServeAccess }
  log: Logger
  /** Aborted to give up waiting (a signal to the process). */
  signal: AbortSignal
  /** Told of the lease as soon as it exists, before it is held. */
  onLease?(lease: Lease): void
}

/**
 * Takes the lease of the node's store: at once when it is free, else after standing by (the standby's API answering)
 * until the active instance stops renewing it. Resolves with the lease held; rejects when `signal` aborts.
 */
export async function takeStore({ pool, identity, durationMs, api, log, signal, onLease }: TakeStoreParameters): Promise<Lease> {
  const lease = await Lease.start(pool, {
    name: nodeLeaseName(identity),
    durationMs,
    onError: (error) => log.warn('the lease of the store could not be renewed: {error}', { error: error.message }),
  })
  onLease?.(lease)
  if (lease.held) return lease
  const holder = await Lease.current(pool, lease.name).catch(() => undefined)
  log.info('Standing by: another instance ({holder}) holds the store of {address}; taking over when it stops', {
    holder: holder?.holder ?? 'unknown',
    address: identity.address,
  })
  let server: HttpServer | undefined
  const waitingSince = performance.now()
  try {
    server = await serveStandby(api)
    log.info('REST API (standing by): {url}', { url: `${server.url}${API_BASE_PATH}` })
    await lease.waitUntilHeld(signal)
  } catch (e) {
    await server?.close(0)
    await lease.stop()
    throw e
  }
  await server.close(0)
  log.info('Took over the store of {address} after standing by {seconds} s', {
    address: identity.address,
    seconds: ((performance.now() - waitingSince) / 1000).toFixed(1),
  })
  return lease
}
