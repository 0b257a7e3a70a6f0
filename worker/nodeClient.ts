/**
 * The REST API as methods: each calls one endpoint of /api/v1 and resolves with its JSON, exactly as `fetch` would
 * give it (docs/rest-api.md), or throws a NodeApiError carrying the answer's status and code. The page's proxy
 * sends over the request channel (apiChannel.ts), not through the service worker, so it works in a page the
 * service worker does not control (a hard reload) and in every tab of the origin alike; sluice/client (client.ts)
 * sends with fetch. Every path, body and answer is typed from openapi.gen.ts (docs/decisions/0046).
 */
import { stringify } from '../src/api/bigintJson.ts'
import type { ErrorCode } from '../src/api/errorCodes.ts'
import type { paths } from '../src/api/openapi.gen.ts'
import { SluiceError } from '../src/errors.ts'
import { jsonParse } from '../src/storage/json.ts'
import { API_PATH } from './names.ts'
import type { Address, StorageDump } from './publicTypes.ts'

/** What the API writes for a value of type T: amounts and identifiers (bigints) as decimal strings. */
export type AsJson<T> = T extends bigint ? string : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T

/** An amount, identifier or block count as the API takes it: a bigint, a safe integer, or a decimal string. */
export type Amount = bigint | number | string

/** A path of openapi.json (src/api/openapi.gen.ts, generated from the routes: never written by hand). */
export type ApiPath = keyof paths
type Method = 'get' | 'put' | 'post' | 'patch' | 'delete'
/** The methods a path serves. */
export type MethodOf<P extends ApiPath> = { [M in Method]: paths[P][M] extends undefined ? never : M }[Method]
type Operation<P extends ApiPath, M extends MethodOf<P>> = NonNullable<paths[P][M]>
type JsonOf<T> = T extends { content: { 'application/json': infer J } } ? J : never
/** The JSON of an operation's success (200 or 201), as openapi.json documents it. */
export type Answer<P extends ApiPath, M extends MethodOf<P>> = {
  [S in keyof Operation<P, M>['responses'] & (200 | 201)]: JsonOf<Operation<P, M>['responses'][S]>
}[keyof Operation<P, M>['responses'] & (200 | 201)]
/** An operation's JSON body, whose integers may also be bigints (sent as decimal strings). */
export type Body<P extends ApiPath, M extends MethodOf<P>> = WithBigints<JsonOf<NonNullable<Operation<P, M>['requestBody']>>>
type WithBigints<B> = B extends object ? { [K in keyof B]: number extends B[K] ? B[K] | bigint : B[K] } : B
type PathParams<P extends ApiPath, M extends MethodOf<P>> = Operation<P, M>['parameters']['path']
type Query<P extends ApiPath, M extends MethodOf<P>> = Operation<P, M>['parameters']['query']

export type Channel = Answer<'/channels/{token_address}/{partner_address}', 'get'>
export type NodeStatusJson = Answer<'/status', 'get'>
export type PaymentResult = Answer<'/payments/{token_address}/{target_address}', 'post'>
export type PaymentEvent = Answer<'/payments', 'get'>[number]
/**
 * One push event of GET /events: its name (`payment_received_success`, `channel_opened`, `status`, ...), id and
 * JSON data, as openapi.json documents it: checking `event` narrows `data` to that event's fields.
 */
export type PushEvent = paths['/events']['get']['responses'][200]['content']['text/event-stream']
/** The push event of one name. */
export type PushEventOf<E extends PushEvent['event']> = Extract<PushEvent, { event: E }>

/** The node answered with an error: its HTTP status and the API's stable code (`NO_ROUTE`, `NOT_FOUND`, ...). */
export class NodeApiError extends SluiceError {
  override name = 'NodeApiError' as const
  override readonly code: ErrorCode
  readonly status: number
  constructor(status: number, code: ErrorCode, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** Sends one request to the node and gives its Response (the request channel, or anything with fetch's shape). */
export type SendRequest = (request: Request) => Promise<Response>

export type NodeClientOptions = {
  /** Sent as `Authorization: Bearer <token>` (a node served with `sluice serve --api-token-file`). */
  token?: string
}

/**
 * The REST API's operations as methods, over `send`, for the node at `origin` (its API under /api/v1): the page's
 * proxy (the request channel, this page's origin) and sluice/client (fetch, any node's URL) are this one function.
 */
export function nodeClient(send: SendRequest, origin = globalThis.location.origin, { token }: NodeClientOptions = {}) {
  const request = (method: string, path: string, body?: unknown): Promise<Response> => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {}
    const init: RequestInit = { method, headers }
    if (body !== undefined) {
      init.body = stringify(body)
      headers['content-type'] = 'application/json'
    }
    return send(new Request(`${origin}${API_PATH}${path}`, init))
  }
  /** The answer's text, or a NodeApiError with its status and code. */
  const text = async (response: Response): Promise<string> => {
    const text = await response.text()
    if (!response.ok) {
      const error = parseError(text)
      throw new NodeApiError(response.status, error.code ?? `HTTP_${response.status}`, error.errors ?? (text || response.statusText))
    }
    return text
  }
  /** One operation of openapi.json: its path, parameters, query and body checked against the document's types. */
  const call = async <P extends ApiPath, M extends MethodOf<P>>(
    method: M,
    path: P,
    input: { params?: PathParams<P, M>; query?: Query<P, M>; body?: Body<P, M> } = {},
  ): Promise<Answer<P, M>> => {
    const params = (input.params ?? {}) as Record<string, string>
    const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]!))
    const answer = await text(await request(method.toUpperCase(), `${filled}${queryString(input.query)}`, input.body))
    return (answer ? JSON.parse(answer) : undefined) as Answer<P, M>
  }

  return {
    address: () => call('get', '/address'),
    version: () => call('get', '/version'),
    status: () => call('get', '/status'),
    settings: () => call('get', '/settings'),
    contracts: () => call('get', '/contracts'),
    notifications: () => call('get', '/notifications'),
    /** The monitoring services that guard the channels while the node is away, and what each acknowledged (GET /monitoring). */
    monitoring: () => call('get', '/monitoring'),

    tokens: () => call('get', '/tokens'),
    token: (token: Address) => call('get', '/tokens/{token_address}', { params: { token_address: token } }),
    tokenPartners: (token: Address) => call('get', '/tokens/{token_address}/partners', { params: { token_address: token } }),
    registerToken: (token: Address) => call('put', '/tokens/{token_address}', { params: { token_address: token } }),
    /** Testing environment only: mints `value` of a test token to `to` (our address by default). */
    mint: (token: Address, body: Body<'/_testing/tokens/{token_address}/mint', 'post'>) =>
      call('post', '/_testing/tokens/{token_address}/mint', { params: { token_address: token }, body }),

    channels: (token?: Address) => (token ? call('get', '/channels/{token_address}', { params: { token_address: token } }) : call('get', '/channels')),
    channel: (token: Address, partner: Address) =>
      call('get', '/channels/{token_address}/{partner_address}', { params: { token_address: token, partner_address: partner } }),
    openChannel: (body: Body<'/channels', 'put'>) => call('put', '/channels', { body }),
    /** Exactly one of the fields: a new total deposit or withdraw, `state: 'closed'`, or a reveal timeout. */
    updateChannel: (token: Address, partner: Address, body: Body<'/channels/{token_address}/{partner_address}', 'patch'>) =>
      call('patch', '/channels/{token_address}/{partner_address}', { params: { token_address: token, partner_address: partner }, body }),

    connections: () => call('get', '/connections'),
    leaveTokenNetwork: (token: Address) => call('delete', '/connections/{token_address}', { params: { token_address: token } }),

    pay: (token: Address, target: Address, body: Body<'/payments/{token_address}/{target_address}', 'post'>) =>
      call('post', '/payments/{token_address}/{target_address}', { params: { token_address: token, target_address: target }, body }),
    payments: ({ token, partner, ...query }: { token?: Address; partner?: Address } & Query<'/payments', 'get'> = {}) =>
      token && partner
        ? call('get', '/payments/{token_address}/{target_address}', { params: { token_address: token, target_address: partner }, query })
        : token
          ? call('get', '/payments/{token_address}', { params: { token_address: token }, query })
          : call('get', '/payments', { query }),
    pendingTransfers: (token?: Address, partner?: Address) =>
      token && partner
        ? call('get', '/pending_transfers/{token_address}/{partner_address}', { params: { token_address: token, partner_address: partner } })
        : token
          ? call('get', '/pending_transfers/{token_address}', { params: { token_address: token } })
          : call('get', '/pending_transfers'),

    updateUserDeposit: (body: Body<'/user_deposit', 'post'>) => call('post', '/user_deposit', { body }),

    /** The whole store (GET /_state/export), integers restored as bigints: what `importState` takes. */
    exportState: async (): Promise<StorageDump> => jsonParse(await text(await request('GET', '/_state/export'))) as StorageDump,
    /** Stops the node (POST /shutdown); in a page, another tab does not take over until this one stops. */
    shutdown: () => call('post', '/shutdown'),
  }
}

/** `?limit=10&offset=20` of the parameters given, or nothing. */
function queryString(params: Record<string, unknown> | undefined): string {
  const entries = Object.entries(params ?? {}).filter(([, v]) => v !== undefined)
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)]))}` : ''
}

export type NodeClient = ReturnType<typeof nodeClient>

/** The `errors` and `code` of an error answer (a Raiden node gives no code: the caller makes one of the status). */
function parseError(text: string): { errors?: string; code?: ErrorCode } {
  try {
    const value = JSON.parse(text) as { errors?: unknown; code?: unknown }
    return {
      ...(typeof value.errors === 'string' ? { errors: value.errors } : {}),
      ...(typeof value.code === 'string' ? { code: value.code as ErrorCode } : {}),
    }
  } catch {
    return {}
  }
}
