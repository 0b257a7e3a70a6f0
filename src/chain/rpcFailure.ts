import { BaseError, HttpRequestError, RpcRequestError, SocketClosedError, TimeoutError, WebSocketRequestError } from 'viem'

/**
 * What a failed JSON-RPC call tells about the endpoint (docs/decisions/0052-rpc-endpoints.md):
 * - `transient`: the endpoint did not answer (refused, reset, timed out, an HTTP error, a socket closed) or said it
 *   is overloaded (429, "limit exceeded", an internal error, "try again"): the call is worth again, here after a
 *   wait or at once on another endpoint;
 * - `answer`: the endpoint answered, and another would answer the same (a revert, "nonce too low", "already known",
 *   bad params, an unknown method): never retried, never taken to the next endpoint.
 */
export type RpcFailure = {
  kind: 'transient' | 'answer'
  /** One line for a log and the health snapshot: `timed out`, `HTTP 503`, `-32005 limit exceeded`... */
  reason: string
  /** The endpoint asked for this much rest (a 429's Retry-After, in ms). */
  retryAfterMs?: number
  /** The endpoint gave no answer in time (as opposed to an answer that is an error). */
  timeout?: boolean
}

/**
 * A failure in a word, for the metrics' `kind` label (docs/decisions/0078): few values, whatever the endpoint said.
 * `connection`: refused, reset, a socket closed (no HTTP answer); `rpc_error`: a JSON-RPC error that passes the call
 * on (an overloaded node: -32005, -32603...); `unavailable`: every endpoint failed; `answer`: an answer (a revert).
 */
export type RpcFailureKind = 'timeout' | 'rate_limited' | 'http_5xx' | 'http_4xx' | 'rpc_error' | 'connection' | 'unavailable' | 'answer'

/** The kind of a failure, from what classifyRpcFailure made of it (its reasons are written below, in this module). */
export function rpcFailureKind(failure: RpcFailure): RpcFailureKind {
  if (failure.kind === 'answer') return 'answer'
  if (failure.timeout) return 'timeout'
  if (failure.reason === 'no endpoint answered') return 'unavailable'
  if (/^HTTP 429\b|^-?\d+ rate limited$/.test(failure.reason)) return 'rate_limited'
  const http = /^HTTP (\d{3})\b/.exec(failure.reason)
  if (http) return Number(http[1]) >= 500 ? 'http_5xx' : 'http_4xx'
  if (/^-?\d+\b/.test(failure.reason)) return 'rpc_error'
  return 'connection'
}

/** Every endpoint failed (or none may be used): thrown by the node's transport once its retries are spent. */
export class RpcUnavailableError extends BaseError {
  constructor(method: string, reasons: readonly string[], cause: Error | undefined) {
    // The reasons in the short message too: it is what a log line and ChainRpcError's message show.
    super(`${method}: no RPC endpoint answered${reasons.length > 0 ? ` (${reasons.slice(0, 4).join('; ')})` : ''}`, {
      name: 'RpcUnavailableError',
      details: reasons.join('; '),
      ...(cause ? { cause } : {}),
    })
  }
}

/**
 * eth_getLogs took longer than the attempt's time on an endpoint that answers a probe at once: the range asked is
 * too heavy for it, which a smaller range fixes (getLogsChunk halves it); not an endpoint down.
 */
export class LogRangeTimeoutError extends BaseError {
  constructor(endpoint: string, timeoutMs: number) {
    super(`eth_getLogs took more than ${timeoutMs} ms on ${endpoint}, which answers otherwise`, { name: 'LogRangeTimeoutError' })
  }
}

/** Codes that mean "not now" rather than "no": rate limits (429, QuickNode's -32007), overload. */
const RATE_LIMIT_CODES = new Set([429, -32007])
/** JSON-RPC codes an overloaded node or gateway answers: internal error, limit exceeded, resource unavailable; wallets' disconnected. */
const OVERLOAD_CODES = new Set([-32603, -32005, -32002, 4900, 4901])
const RATE_LIMIT_TEXT = /rate.?limit|rate exceeded|request rate|too many requests|requests? per|per second|request count|quota|capacity|throttl/i
const OVERLOAD_TEXT = /overload|busy|try again|temporar|unavailable|timed? ?out|timeout|upstream|bad gateway|gateway/i
/** A revert, whatever code an endpoint wraps it in (some answer -32603 or -32000 with it in the message). */
const REVERT_TEXT = /execution reverted|\brevert(ed)?\b|gas required exceeds allowance|out of gas/i

/** What nodes say to a raw transaction they hold already: it was broadcast (geth, Nethermind, Erigon, anvil, others). */
const ALREADY_KNOWN = /already known|already imported|known transaction|already in (the )?(mem)?pool|alreadyknown/i

/** Whether a node's answer to eth_sendRawTransaction says it holds the transaction already. */
export function saysAlreadyKnown(text: string): boolean {
  return ALREADY_KNOWN.test(text)
}

/** Classifies `error`, which a call threw (viem's errors, a provider's, or ours, with their causes). */
export function classifyRpcFailure(error: unknown): RpcFailure {
  const chain = causes(error)
  if (chain.some((e) => e instanceof LogRangeTimeoutError)) return { kind: 'answer', reason: 'eth_getLogs range too heavy (timed out)' }
  if (chain.some((e) => e instanceof RpcUnavailableError)) return { kind: 'transient', reason: 'no endpoint answered' }
  if (chain.some((e) => e instanceof TimeoutError)) return { kind: 'transient', reason: 'timed out', timeout: true }
  const text = chain.map(messageOf).join(' | ')
  const http = chain.find((e): e is HttpRequestError | RpcRequestError => e instanceof HttpRequestError || e instanceof RpcRequestError)
  const status = http?.status
  const code = chain.map(codeOf).find((c) => c !== undefined && c !== -1)
  const said = `${code ?? ''} ${firstLine(rpcMessageOf(chain) ?? '')}`.trim()
  if (code === 3 || REVERT_TEXT.test(text)) return { kind: 'answer', reason: said || 'reverted' }
  if (status === 429 || (code !== undefined && RATE_LIMIT_CODES.has(code)))
    return { kind: 'transient', reason: status === 429 ? 'HTTP 429' : `${code} rate limited`, ...retryAfter(http) }
  if (code !== undefined) {
    // The endpoint answered in JSON-RPC: what it says decides, unless its HTTP status says the gateway failed.
    if (status !== undefined && (status >= 500 || status === 401 || status === 403)) return { kind: 'transient', reason: `HTTP ${status} ${said}` }
    if (OVERLOAD_CODES.has(code) || RATE_LIMIT_TEXT.test(text) || OVERLOAD_TEXT.test(rpcMessageOf(chain) ?? '')) return { kind: 'transient', reason: said }
    return { kind: 'answer', reason: said }
  }
  // No JSON-RPC answer: the endpoint, the way to it, or its gateway failed.
  if (status !== undefined) return { kind: 'transient', reason: `HTTP ${status}` }
  if (http || chain.some((e) => e instanceof SocketClosedError || e instanceof WebSocketRequestError))
    return { kind: 'transient', reason: firstLine(networkReason(chain) ?? 'unreachable') }
  return { kind: 'transient', reason: firstLine(text || 'failed') }
}

/**
 * Whether eth_getLogs failed with what a smaller range may fix: a JSON-RPC answer (too many results, range too large,
 * a query that timed out at the node; some answer it as an internal error), or a range that timed out on an endpoint
 * that answers otherwise. Not a rate limit, an endpoint down or unreachable, nor a gateway's 5xx: shrinking the
 * range for those would only make more calls for nothing.
 */
export function isLogRangeRefusal(error: unknown): boolean {
  const chain = causes(error)
  if (chain.some((e) => e instanceof LogRangeTimeoutError)) return true
  // RpcUnavailableError keeps the last endpoint's error as its cause: that is what decides.
  const http = chain.find((e): e is HttpRequestError | RpcRequestError => e instanceof HttpRequestError || e instanceof RpcRequestError)
  const status = http?.status
  const code = chain.map(codeOf).find((c) => c !== undefined && c !== -1)
  if (code === undefined || RATE_LIMIT_CODES.has(code) || status === 429 || (status !== undefined && status >= 500)) return false
  if (chain.some((e) => e instanceof TimeoutError)) return false
  return !RATE_LIMIT_TEXT.test(chain.map(messageOf).join(' | '))
}

/** The error and its causes, outermost first (viem's BaseError, Error.cause, a provider's `data.cause`). */
function causes(error: unknown): unknown[] {
  const out: unknown[] = []
  let e: unknown = error
  while (e !== undefined && e !== null && out.length < 10 && !out.includes(e)) {
    out.push(e)
    e = typeof e === 'object' ? (e as { cause?: unknown }).cause : undefined
  }
  return out
}

function codeOf(e: unknown): number | undefined {
  const code = typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined
  return typeof code === 'number' && Number.isInteger(code) ? code : undefined
}

function messageOf(e: unknown): string {
  if (typeof e !== 'object' || e === null) return String(e)
  const { shortMessage, details, message, data } = e as { shortMessage?: unknown; details?: unknown; message?: unknown; data?: unknown }
  const dataMessage = typeof data === 'object' && data !== null ? (data as { message?: unknown }).message : undefined
  return [shortMessage, details, message, dataMessage].filter((m) => typeof m === 'string').join(' ')
}

/** The endpoint's own words: the innermost JSON-RPC error's message (viem's wrappers put theirs around it). */
function rpcMessageOf(chain: unknown[]): string | undefined {
  for (const e of [...chain].reverse()) {
    if (codeOf(e) === undefined || typeof e !== 'object' || e === null) continue
    const { message, data } = e as { message?: unknown; data?: unknown }
    const dataMessage = typeof data === 'object' && data !== null ? (data as { message?: unknown }).message : undefined
    const said = [message, dataMessage].filter((m) => typeof m === 'string').join(': ')
    if (said) return said
  }
  return undefined
}

/** Why a request never got an answer: fetch's cause (ECONNREFUSED, ECONNRESET, "other side closed"), or the socket's. */
function networkReason(chain: unknown[]): string | undefined {
  const inner = [...chain].reverse().find((e) => e instanceof Error && !(e instanceof BaseError))
  if (inner instanceof Error) return `${(inner as { code?: unknown }).code ?? ''} ${inner.message}`.trim()
  const socket = chain.find((e) => e instanceof SocketClosedError || e instanceof WebSocketRequestError)
  return socket ? (socket as BaseError).shortMessage : undefined
}

function retryAfter(http: HttpRequestError | RpcRequestError | undefined): { retryAfterMs?: number } {
  const value = http?.headers?.get('retry-after')
  if (!value) return {}
  const seconds = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - Date.now()
  return Number.isFinite(seconds) && seconds >= 0 ? { retryAfterMs: seconds } : {}
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? text
  return line.length > 160 ? `${line.slice(0, 157)}...` : line
}
