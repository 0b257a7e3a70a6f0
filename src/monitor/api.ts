import { Hono, type Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { accessChecks, type ApiAccess } from '../api/access.ts'
import { ApiError, errorAnswer } from '../api/errors.ts'
import type { ClaimStep, Duty, MonitorStep, WatchedChannel } from './records.ts'
import type { MonitoringService } from './service.ts'

export const MONITOR_API_BASE_PATH = '/api/v1'

const PATHS = ['/status', '/channels', '/monitor_calls'] as const

/** JSON with bigints as decimal strings (docs/rest-api.md, convention 4), undefined fields left out. */
function json(c: Context, body: unknown): Response {
  return c.body(
    JSON.stringify(body, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
    200,
    { 'content-type': 'application/json' },
  )
}

/** `limit` (1 to 1000, default 100) and `offset` (default 0); any other query key, or a repeated one, is 400. */
function page(c: Context): { limit: number; offset: number } {
  const url = new URL(c.req.url)
  const keys = [...url.searchParams.keys()]
  const unknown = keys.find((k) => k !== 'limit' && k !== 'offset')
  if (unknown !== undefined) throw new ApiError(400, `unknown query parameter ${JSON.stringify(unknown)} (limit and offset are known)`)
  if (new Set(keys).size !== keys.length) throw new ApiError(400, 'a query parameter is repeated')
  const integer = (name: string, fallback: number, min: number, max: number) => {
    const raw = url.searchParams.get(name)
    if (raw === null) return fallback
    const n = Number(raw)
    if (!/^\d+$/.test(raw) || n < min || n > max) throw new ApiError(400, `${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`)
    return n
  }
  return { limit: integer('limit', 100, 1, 1000), offset: integer('offset', 0, 0, Number.MAX_SAFE_INTEGER) }
}

const stateOf = (channel: WatchedChannel) => (channel.settled ? 'settled' : channel.closed ? 'closed' : 'opened')

function stepJson(step: MonitorStep | ClaimStep) {
  return {
    status: step.status,
    transaction_hash: step.transactionHash,
    block_number: step.blockNumber,
    note: step.note,
  }
}

function channelJson(channel: WatchedChannel) {
  return {
    token_network_address: channel.tokenNetwork,
    channel_identifier: channel.channelId,
    state: stateOf(channel),
    closed_by: channel.closed?.by,
    closed_block: channel.closed?.block,
    settled_block: channel.settled?.block,
    requests: Object.values(channel.requests).map((held) => ({
      requester: held.request.non_closing_participant,
      partner: held.closing,
      nonce: held.request.balance_proof.nonce,
      balance_hash: held.request.balance_proof.balance_hash,
      reward_amount: held.request.reward_amount,
      received_at: new Date(held.receivedAt).toISOString(),
    })),
    duties: Object.values(channel.duties).map((duty) => ({
      requester: duty.nonClosing,
      monitor: stepJson(duty.monitor),
      reward: duty.claim ? { amount: duty.claim.amount, ...stepJson(duty.claim) } : null,
    })),
  }
}

/** The monitor calls the service made (or is making): each with what it submitted and its reward. */
function monitorCallJson(channel: WatchedChannel, duty: Duty) {
  return {
    token_network_address: channel.tokenNetwork,
    channel_identifier: channel.channelId,
    closing_participant: duty.closing,
    non_closing_participant: duty.nonClosing,
    nonce: duty.monitor.nonce,
    reward_amount: duty.monitor.rewardAmount,
    ...stepJson(duty.monitor),
    reward: duty.claim ? { amount: duty.claim.amount, ...stepJson(duty.claim) } : null,
  }
}

const called = (duty: Duty) =>
  duty.monitor.status === 'sending' ||
  duty.monitor.status === 'sent' ||
  duty.monitor.status === 'done' ||
  (duty.monitor.status === 'failed' && duty.monitor.nonce !== undefined)

export type MonitorApiParameters = {
  service: Pick<MonitoringService, 'status' | 'channels'>
  /** Who may call (src/api/access.ts, docs/decisions/0025): the same rules as `sluice serve`. */
  access?: ApiAccess
  /** The service's libp2p peer id, when it has a libp2p transport. */
  peerId?: string | undefined
  /** Called once a request failed with an error nothing maps to a status (a bug). */
  onInternalError?(error: unknown): void
}

/**
 * The monitoring service's REST API (Hono), read only: `GET /api/v1/status`, `/channels` (the channels it watches,
 * with the requests it holds and the duties their closes left) and `/monitor_calls` (the monitor calls it made, with
 * their rewards). Who may call is checked first, as for the node's API; errors are `{"errors", "code"}`.
 */
export function createMonitorApi({ service, access, peerId, onInternalError }: MonitorApiParameters): Hono {
  const app = new Hono({ strict: true }).basePath(MONITOR_API_BASE_PATH)
  for (const check of access ? accessChecks(access) : []) app.use(check)

  app.get('/status', (c) => {
    const s = service.status()
    const monitor: Record<string, number> = {}
    const claim: Record<string, number> = {}
    let claimed = 0n
    for (const channel of service.channels())
      for (const duty of Object.values(channel.duties)) {
        monitor[duty.monitor.status] = (monitor[duty.monitor.status] ?? 0) + 1
        if (duty.claim) claim[duty.claim.status] = (claim[duty.claim.status] ?? 0) + 1
        if (duty.claim?.status === 'claimed') claimed += duty.claim.amount
      }
    const refusedTotal = Object.values(s.requests.refused).reduce((a, b) => a + (b ?? 0), 0)
    return json(c, {
      address: s.address,
      chain_id: s.chainId,
      monitoring_service_address: s.monitoringService,
      peer_id: peerId ?? null,
      registration: s.registration
        ? { registered: s.registration.registered, valid_till: new Date(Number(s.registration.validTill) * 1000).toISOString(), url: s.registration.url }
        : null,
      synced_block: s.syncedBlock,
      latest_block: s.latestBlock,
      requests: { accepted: s.requests.accepted, acknowledged_again: s.requests.resent, refused: s.requests.refused, refused_total: refusedTotal },
      watching: s.watching,
      duties: { monitor, claim, rewards_claimed: claimed },
      // On PostgreSQL (docs/decisions/0077): whether this instance leads; every instance answers from the shared store.
      ...(s.instance ? { instance: { id: s.instance.instance, leading: s.instance.leading } } : {}),
    })
  })

  app.get('/channels', (c) => {
    const { limit, offset } = page(c)
    const watched = service.channels().filter((ch) => Object.keys(ch.requests).length > 0 || Object.keys(ch.duties).length > 0)
    return json(c, watched.slice(offset, offset + limit).map(channelJson))
  })

  app.get('/monitor_calls', (c) => {
    const { limit, offset } = page(c)
    const calls = service.channels().flatMap((ch) =>
      Object.values(ch.duties)
        .filter(called)
        .map((duty) => monitorCallJson(ch, duty)),
    )
    return json(c, calls.slice(offset, offset + limit))
  })

  app.on(['POST', 'PUT', 'PATCH', 'DELETE'], [...PATHS], () => {
    throw new ApiError(405, 'this API is read only: GET', { headers: { allow: 'GET, HEAD' } })
  })
  app.notFound(() => errorAnswer(new ApiError(404, 'invalid endpoint')))
  app.onError((error) => {
    if (error instanceof ApiError) return errorAnswer(error)
    if (error instanceof HTTPException)
      return error.res ? error.getResponse() : errorAnswer(new ApiError(error.status as ContentfulStatusCode, error.message || `HTTP ${error.status}`))
    onInternalError?.(error)
    return errorAnswer(new ApiError(500, `internal error: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`))
  })
  return app
}
