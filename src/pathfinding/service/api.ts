import { Hono, type Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { cors } from 'hono/cors'
import { getAddress, type Address } from 'viem'
import { pfsErrors } from '../errorCodes.ts'
import { iouJson } from '../iou.ts'
import { PfsAnswerError } from './errors.ts'
import { readFeedbackRequest, readIouRequest, readJsonObject, readRoutesRequest } from './requests.ts'
import type { PathfindingService } from './service.ts'

export const PFS_API_BASE_PATH = '/api/v1'

/**
 * JSON with bigints written as JSON integers, digit for digit: Raiden's clients read amounts as numbers (a Python int
 * of any size; its light client with a lossless parser), as raiden-services writes them.
 */
export function pfsJson(value: unknown): string {
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : pfsJson(v))).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${pfsJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

const answer = (body: unknown, status = 200) => new Response(pfsJson(body), { status, headers: { 'content-type': 'application/json' } })

/** raiden-services' error answer: `{errors, error_code, error_details}` with the error's HTTP status. */
function errorAnswer(error: PfsAnswerError): Response {
  const { code, status } = pfsErrors[error.pfsName]
  return answer({ errors: error.shortMessage, error_code: code, error_details: error.errorDetails }, status)
}

/** A token network in the path: EIP-55 (raiden-services' InvalidTokenNetwork otherwise) and followed (UnsupportedTokenNetwork). */
function tokenNetworkOf(c: Context, service: Pick<PathfindingService, 'followed'>, mustBeFollowed = true): Address {
  const raw = c.req.param('tokenNetwork') ?? ''
  if (!/^0x[0-9a-fA-F]{40}$/.test(raw) || getAddress(raw) !== raw)
    throw new PfsAnswerError('InvalidTokenNetwork', 'The token network needs to be given as a checksummed address', { token_network: raw })
  if (mustBeFollowed && !service.followed(raw as Address))
    throw new PfsAnswerError('UnsupportedTokenNetwork', 'This service does not work on the given token network.', { token_network: raw })
  return raw as Address
}

export type PfsApiParameters = {
  service: Pick<PathfindingService, 'info' | 'status' | 'routes' | 'lastIou' | 'feedback' | 'addressMetadata' | 'followed'>
  /** Added to GET /info: the service's libp2p peer id and its relays, where nodes send it their updates. */
  transportInfo?: { peerId: string; relays: readonly string[] } | undefined
  /** Called once a request failed with an error nothing maps to an answer (a bug). */
  onInternalError?(error: unknown): void
}

/**
 * The pathfinding service's REST API (docs/decisions/0072): Raiden's (raiden-services api.py), so that a Raiden node or
 * light client can use it, and GET /status of ours. A public service, as raiden-services': any web page may call it
 * (CORS for every origin: a light client in a page asks it for routes), and nothing in it needs a secret (an IOU and
 * the last-IOU query are signed by their sender, a feedback names its token).
 */
export function createPfsApi({ service, transportInfo, onInternalError }: PfsApiParameters): Hono {
  const app = new Hono({ strict: true }).basePath(PFS_API_BASE_PATH)
  app.use(cors({ origin: '*', allowMethods: ['GET', 'POST', 'OPTIONS'], allowHeaders: ['Origin', 'Content-Type', 'Accept'] }))
  // A routes request with an IOU is well under 2 kB; a feedback's path of 100 hops about 4.
  app.use(bodyLimit({ maxSize: 64 * 1024, onError: () => answer({ errors: 'the body is larger than 64 KiB' }, 413) }))

  app.get('/info', () =>
    answer({
      ...service.info(),
      ...(transportInfo ? { peer_id: transportInfo.peerId, relays: transportInfo.relays, matrix_server: transportInfo.relays[0] ?? '' } : {}),
    }),
  )

  app.get('/status', () => {
    const s = service.status()
    const refusedTotal = Object.values(s.updates.refused).reduce((a, b) => a + (b ?? 0), 0)
    return answer({
      address: s.address,
      chain_id: s.chainId,
      peer_id: transportInfo?.peerId ?? null,
      registration: s.registration
        ? { registered: s.registration.registered, valid_till: new Date(Number(s.registration.validTill) * 1000).toISOString(), url: s.registration.url }
        : null,
      synced_block: s.syncedBlock,
      latest_block: s.latestBlock,
      network: { token_networks: s.network.tokenNetworks, channels: s.network.channels, nodes: s.network.nodes, nodes_online: s.network.nodesOnline },
      updates: {
        accepted: s.updates.accepted,
        acknowledged_again: s.updates.resent,
        held_for_unconfirmed_channels: s.updates.held_for_unconfirmed_channels,
        refused: s.updates.refused,
        refused_total: refusedTotal,
      },
      routes: {
        requests: s.routes.requests,
        answered: s.routes.answered,
        no_route: s.routes.noRoute,
        refused: s.routes.refused,
        feedback: s.routes.feedback,
      },
      ious: { held: s.ious.held, claiming: s.ious.claiming, claimed: s.ious.claimed, expired: s.ious.expired, claimed_amount: s.ious.claimedAmount },
      // On PostgreSQL (docs/decisions/0077): whether this instance leads; every instance answers from the shared store.
      ...(s.instance ? { instance: { id: s.instance.instance, leading: s.instance.leading } } : {}),
    })
  })

  app.post('/:tokenNetwork/paths', async (c) => {
    const tokenNetwork = tokenNetworkOf(c, service)
    const request = readRoutesRequest(readJsonObject(await c.req.text()))
    return answer(await service.routes(tokenNetwork, request))
  })

  app.get('/:tokenNetwork/payment/iou', (c) => {
    tokenNetworkOf(c, service)
    const held = service.lastIou(readIouRequest(c.req.url))
    return held ? answer({ last_iou: iouJson(held.iou) }) : answer({ last_iou: null }, 404)
  })

  app.post('/:tokenNetwork/feedback', async (c) => {
    const tokenNetwork = tokenNetworkOf(c, service)
    const request = readFeedbackRequest(readJsonObject(await c.req.text()))
    // The sender need not know why a feedback is not taken (raiden-services answers 400 with nothing more).
    return (await service.feedback(tokenNetwork, request)) ? answer({}) : answer({ errors: 'no such routes answer (or too old for feedback)' }, 400)
  })

  app.get('/address/:address/metadata', (c) => {
    const raw = c.req.param('address')
    if (!/^0x[0-9a-fA-F]{40}$/.test(raw) || getAddress(raw) !== raw)
      throw new PfsAnswerError('InvalidAddress', 'The address needs to be a valid checksummed Ethereum address', { address: raw })
    const metadata = service.addressMetadata(raw as Address)
    if (!metadata) throw new PfsAnswerError('AddressNotOnline', 'There is no user found online for given address.', { address: raw })
    return answer(metadata)
  })

  const methodNotAllowed = (allow: string) => () => answer({ errors: `method not allowed: ${allow}` }, 405)
  app.on(['GET', 'PUT', 'PATCH', 'DELETE'], ['/:tokenNetwork/paths', '/:tokenNetwork/feedback'], methodNotAllowed('POST'))
  app.on(['POST', 'PUT', 'PATCH', 'DELETE'], ['/info', '/status', '/:tokenNetwork/payment/iou', '/address/:address/metadata'], methodNotAllowed('GET'))
  app.notFound(() => answer({ errors: 'invalid endpoint' }, 404))
  app.onError((error) => {
    if (error instanceof PfsAnswerError) return errorAnswer(error)
    const code = (error as { code?: string }).code
    // The chain could not be read for an IOU's checks: try again later.
    if (code === 'CHAIN_RPC') return answer({ errors: `the chain cannot be read now: ${error.message.split('\n')[0]}` }, 503)
    if (code === 'STORAGE' || code === 'STORAGE_CLOSED') return answer({ errors: 'the service is stopping' }, 503)
    onInternalError?.(error)
    return answer({ errors: `internal error: ${error.message.split('\n')[0]}` }, 500)
  })
  return app
}
