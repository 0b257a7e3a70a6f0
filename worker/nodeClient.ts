/**
 * The REST API as methods: each calls one endpoint of /api/v1 and resolves with its JSON, exactly as `fetch` would
 * give it (docs/rest-api.md), or throws a NodeApiError carrying the answer's status and code. The requests go
 * over the request channel (apiChannel.ts), not through the service worker, so the proxy works in a page the
 * service worker does not control (a hard reload) and in every tab of the origin alike.
 */
import type { Address, Hex } from 'viem'
import type { ChannelJson } from '../src/api/channelJson.ts'
import type { ErrorCode } from '../src/api/errorCodes.ts'
import { SluiceError } from '../src/errors.ts'
import { jsonParse } from '../src/storage/json.ts'
import type { StorageDump } from '../src/storage/storage.ts'
import { API_PATH } from './names.ts'

/** What the API writes for a value of type T: amounts and identifiers (bigints) as decimal strings. */
export type AsJson<T> = T extends bigint ? string : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T

/** An amount, identifier or block count as the API takes it: a bigint, a safe integer, or a decimal string. */
export type Amount = bigint | number | string

export type Channel = AsJson<ChannelJson>
export type NodeStatusJson = { status: 'ready' | 'syncing' | 'unavailable'; blocks_to_sync?: string }
export type PaymentResult = {
  initiator_address: Address
  target_address: Address
  token_address: Address
  amount: string
  identifier: string
  secret: Hex
  secret_hash: Hex
}
export type PaymentEvent = { event: string; identifier: string; amount: string; log_time: string; [field: string]: unknown }
type JsonObject = { [key: string]: unknown }

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

export function nodeClient(send: SendRequest, origin = globalThis.location.origin) {
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const init: RequestInit = { method }
    if (body !== undefined) {
      init.body = JSON.stringify(body, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))
      init.headers = { 'content-type': 'application/json' }
    }
    const response = await send(new Request(`${origin}${API_PATH}${path}`, init))
    const text = await response.text()
    if (!response.ok) {
      const error = parseError(text)
      throw new NodeApiError(response.status, error.code ?? `HTTP_${response.status}`, error.errors ?? (text || response.statusText))
    }
    return (text ? JSON.parse(text) : undefined) as T
  }
  const segment = (value: string) => `/${encodeURIComponent(value)}`
  const query = (params: Record<string, Amount | boolean | undefined>) => {
    const entries = Object.entries(params).filter(([, v]) => v !== undefined)
    return entries.length ? `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)]))}` : ''
  }

  return {
    address: () => call<{ our_address: Address }>('GET', '/address'),
    version: () => call<{ version: string }>('GET', '/version'),
    status: () => call<NodeStatusJson>('GET', '/status'),
    settings: () => call<JsonObject>('GET', '/settings'),
    contracts: () => call<JsonObject>('GET', '/contracts'),
    notifications: () => call<JsonObject[]>('GET', '/notifications'),
    /** The monitoring services that guard the channels while the node is away, and what each acknowledged (GET /monitoring). */
    monitoring: () => call<JsonObject>('GET', '/monitoring'),

    tokens: () => call<Address[]>('GET', '/tokens'),
    token: (token: Address) => call<Address>('GET', `/tokens${segment(token)}`),
    tokenPartners: (token: Address) => call<{ partner_address: Address; channel: string }[]>('GET', `/tokens${segment(token)}/partners`),
    registerToken: (token: Address) => call<{ token_network_address: Address }>('PUT', `/tokens${segment(token)}`),
    /** Testing environment only: mints `value` of a test token to `to` (our address by default). */
    mint: (token: Address, body: { to: Address; value: Amount }) => call<{ transaction_hash: Hex }>('POST', `/_testing/tokens${segment(token)}/mint`, body),

    channels: (token?: Address) => call<Channel[]>('GET', `/channels${token ? segment(token) : ''}`),
    channel: (token: Address, partner: Address) => call<Channel>('GET', `/channels${segment(token)}${segment(partner)}`),
    openChannel: (body: { token_address: Address; partner_address: Address; total_deposit?: Amount; settle_timeout?: Amount; reveal_timeout?: Amount }) =>
      call<Channel>('PUT', '/channels', body),
    /** Exactly one of the fields: a new total deposit or withdraw, `state: 'closed'`, or a reveal timeout. */
    updateChannel: (
      token: Address,
      partner: Address,
      body: { total_deposit: Amount } | { total_withdraw: Amount } | { state: 'closed' } | { reveal_timeout: Amount },
    ) => call<Channel>('PATCH', `/channels${segment(token)}${segment(partner)}`, body),

    connections: () => call<Record<Address, JsonObject>>('GET', '/connections'),
    leaveTokenNetwork: (token: Address) => call<Channel[]>('DELETE', `/connections${segment(token)}`),

    pay: (token: Address, target: Address, body: { amount: Amount; identifier?: Amount; secret?: Hex; secret_hash?: Hex; lock_timeout?: Amount }) =>
      call<PaymentResult>('POST', `/payments${segment(token)}${segment(target)}`, body),
    payments: (filter: { token?: Address; partner?: Address; limit?: number; offset?: number } = {}) =>
      call<PaymentEvent[]>(
        'GET',
        `/payments${filter.token ? segment(filter.token) : ''}${filter.token && filter.partner ? segment(filter.partner) : ''}${query({ limit: filter.limit, offset: filter.offset })}`,
      ),
    pendingTransfers: (token?: Address, partner?: Address) =>
      call<JsonObject[]>('GET', `/pending_transfers${token ? segment(token) : ''}${token && partner ? segment(partner) : ''}`),

    userDeposit: () => call<JsonObject>('GET', '/user_deposit'),
    updateUserDeposit: (body: { total_deposit: Amount } | { planned_withdraw_amount: Amount } | { withdraw_amount: Amount }) =>
      call<JsonObject>('POST', '/user_deposit', body),

    /** The whole store (GET /_state/export), integers restored as bigints: what `importState` takes. */
    exportState: async (): Promise<StorageDump> => {
      const response = await send(new Request(`${origin}${API_PATH}/_state/export`))
      const text = await response.text()
      if (!response.ok) {
        const error = parseError(text)
        throw new NodeApiError(response.status, error.code ?? `HTTP_${response.status}`, error.errors ?? text)
      }
      return jsonParse(text) as StorageDump
    },
    /** Stops the node (POST /shutdown); in a page, another tab does not take over until this one stops. */
    shutdown: () => call<JsonObject>('POST', '/shutdown'),
  }
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
