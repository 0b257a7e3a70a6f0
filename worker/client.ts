/**
 * `sluice/client`: the REST API of any Sluice node (or a Raiden node) over HTTP, as typed methods. The same
 * implementation as the page's proxy (nodeClient.ts), over `fetch` and the node's URL; its types are generated from
 * openapi.json (docs/decisions/0046-clients-typed-from-openapi.md).
 *
 *   const node = httpClient('http://127.0.0.1:5001')
 *   const channel = await node.openChannel({ token_address, partner_address, total_deposit: 1000n })
 */
import { nodeClient, type NodeClient } from './nodeClient.ts'

export type HttpClientOptions = {
  /** The node's API token (`sluice serve --api-token-file`), sent as `Authorization: Bearer <token>`. */
  token?: string
  /** What sends the requests (default the global fetch). */
  fetch?: (request: Request) => Promise<Response>
}

/** A client of the node at `url`: `http://127.0.0.1:5001`, or its API's URL as `sluice serve` prints it (…/api/v1). */
export function httpClient(url: string | URL, { token, fetch = (request) => globalThis.fetch(request) }: HttpClientOptions = {}): NodeClient {
  return nodeClient(
    fetch,
    String(url)
      .replace(/\/+$/, '')
      .replace(/\/api\/v1$/, ''),
    token === undefined ? {} : { token },
  )
}

export { NodeApiError } from './nodeClient.ts'
export type {
  Amount,
  Answer,
  ApiPath,
  Body,
  Channel,
  MethodOf,
  NodeClient,
  NodeClientOptions,
  NodeStatusJson,
  PaymentEvent,
  PaymentResult,
  PushEvent,
  PushEventOf,
} from './nodeClient.ts'
export type { components, paths } from '../src/api/openapi.gen.ts'
export type { ApiErrorCode, ErrorCode } from '../src/api/errorCodes.ts'
