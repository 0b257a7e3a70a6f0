/**
 * The node's REST API as this page calls it: plain fetch('/api/v1/...'), answered by the node in this browser
 * through the service worker, exactly as a dApp calls it. A failure carries the API's own message and code. The
 * same calls reach a headless peer's or the monitoring service's API through the demo's own server (`base`: their
 * `via` in /demo.json), never the node's.
 */
import type { Answer as NodeAnswer, PushEventOf } from 'sluice/client'

export const API = '/api/v1'

export class ApiFailure extends Error {
  override name = 'ApiFailure'
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    /** The request that failed: what its message is about (which token its amounts are of), and whose API it went to. */
    readonly request: { method: string; path: string; body?: unknown; base: string },
  ) {
    super(message)
  }
}

export type Answer = { status: number; body: unknown; ms: number }

/** Any request under /api/v1 (or `base`), whatever its status: for the REST console. */
export async function request(method: string, path: string, body?: string, base = API): Promise<Answer> {
  const started = performance.now()
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    ...(body ? { body } : {}),
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : null
  } catch {
    // not JSON: shown as text
  }
  return { status: response.status, body: parsed, ms: performance.now() - started }
}

/** A call that must succeed: its JSON, or an ApiFailure with the API's message. */
export async function call<T>(method: string, path: string, body?: unknown, base = API): Promise<T> {
  const answer = await request(method, path, body === undefined ? undefined : JSON.stringify(body), base)
  if (answer.status >= 400) {
    const error = answer.body as { errors?: unknown; code?: string } | null
    const message = typeof error?.errors === 'string' ? error.errors : `HTTP ${answer.status}`
    throw new ApiFailure(answer.status, error?.code, message, { method, path, body, base })
  }
  return answer.body as T
}

export const get = <T>(path: string, base = API) => call<T>('GET', path, undefined, base)

/** The same call against a headless node (`sluice serve --api 127.0.0.1:5001`), as a shell line. */
export function curlLine(method: string, path: string, body: string | undefined, base = 'http://127.0.0.1:5001'): string {
  const parts = ['curl', '-sS']
  if (method !== 'GET') parts.push('-X', method)
  parts.push(`'${base}${API}${path}'`)
  if (body) parts.push('-H', "'content-type: application/json'", '-d', `'${body.replaceAll("'", "'\\''")}'`)
  return parts.join(' ')
}

// The node's answers, as openapi.json documents them (src/api/openapi.gen.ts, generated from the routes).
export type Channel = NodeAnswer<'/channels/{token_address}/{partner_address}', 'get'>
export type Network = NodeAnswer<'/tokens/{token_address}/network', 'get'>
export type NetworkChannel = Network['channels'][number]
export type PaymentResult = NodeAnswer<'/payments/{token_address}/{target_address}', 'post'>
export type HistoryEntry = NodeAnswer<'/payments', 'get'>[number]
export type Status = NodeAnswer<'/status', 'get'>
/** GET /settings: the page shows its off-browser backup (docs/decisions/0034), null without a backup URL. */
export type Settings = NodeAnswer<'/settings', 'get'>
export type Address = NodeAnswer<'/address', 'get'>
export type Notification = NodeAnswer<'/notifications', 'get'>[number]
/** GET /monitoring: the services that guard the channels, and what each acknowledged (decision 0035). */
export type Monitoring = NodeAnswer<'/monitoring', 'get'>
/** One event of the node (GET /_debug/node_events): its name, time, and its own fields in snake case (open). */
export type NodeEvent = NodeAnswer<'/_debug/node_events', 'get'>[number]
/** One chain event the node keeps (GET /_debug/blockchain_events/...): its args are the contract event's own (open). */
export type ChainEvent = NodeAnswer<'/_debug/blockchain_events/network', 'get'>[number]
/** The data of the event stream's node_error: something failed in the node's background work. */
export type NodeError = PushEventOf<'node_error'>['data']

// The monitoring service's own API (its GET /channels and /monitor_calls; decision 0031), which openapi.json does
// not describe: the demo's server relays it.
/** A step of the monitoring service's work (its GET /channels and /monitor_calls; decision 0031). */
export type MonitorStep = { status: string; transaction_hash?: string; block_number?: string; note?: string }

/** A channel the monitoring service watches: the requests it holds and what a close left it to do. */
export type MonitorChannel = {
  token_network_address: string
  channel_identifier: string
  state: 'opened' | 'closed' | 'settled'
  closed_by?: string
  closed_block?: string
  settled_block?: string
  requests: { requester: string; partner: string; nonce: string; reward_amount: string; received_at: string }[]
  duties: { requester: string; monitor: MonitorStep; reward: (MonitorStep & { amount: string }) | null }[]
}

/** A monitor call the service made (or is making), with its reward. */
export type MonitorCall = MonitorStep & {
  token_network_address: string
  channel_identifier: string
  closing_participant: string
  non_closing_participant: string
  nonce?: string
  reward_amount?: string
  reward: (MonitorStep & { amount: string }) | null
}
