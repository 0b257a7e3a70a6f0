import { getAddress, isAddress, type Address, type Hex } from 'viem'
import type { Iou } from '../../protocol/iou.ts'
import { PathfindingServiceError } from '../errors.ts'

/**
 * A pathfinding service's API as a node calls it (Raiden's PFS API: raiden/network/pathfinding.py, raiden-services
 * api.py; docs/decisions/0072, 0073): its info, the sender's last IOU, routes, and feedback. Every call ends within
 * `timeoutMs`, answer read included, or fails with PathfindingServiceError (`unreachable`, `timeout`, `malformed`, or
 * the service's own refusal with its error code). Amounts come as JSON integers of any size and are read without loss.
 */

export type PfsCall = { fetch: typeof fetch; timeoutMs: number; signal?: AbortSignal }

/** What GET /api/v1/info says (Raiden's PFSInfo), as far as a node uses it. */
export type PfsInfo = {
  url: string
  /** What one routes request costs, in the service token's smallest unit (`price_info`). */
  price: bigint
  chainId: bigint
  tokenNetworkRegistry: Address
  userDeposit: Address
  /** Where its IOUs go and who signs its acknowledgements: the service's address. */
  paymentAddress: Address
  confirmedBlock: bigint
  operator: string
  message: string
  version: string
}

export type SignedIou = Iou & { signature: Hex }

/**
 * A route as answered: its nodes, its fee, and its `address_metadata` as the service sent it, unread (each node's
 * presence record: the node checks each before using it, a third party's word being no proof).
 */
export type PfsRoute = { path: Address[]; estimatedFee: bigint; addressMetadata?: unknown }
export type PfsRoutes = { routes: PfsRoute[]; feedbackToken: string }

/**
 * JSON text with every integer outside a string quoted, so that JSON.parse keeps its digits (an amount of 10^18 is
 * beyond a double's 2^53). Strings, escapes included, pass unchanged; fractions and exponents stay numbers.
 */
export function integersAsStrings(text: string): string {
  let out = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === '"') {
      const start = i++
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1
      out += text.slice(start, ++i)
      continue
    }
    const number = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400))
    if (number && (c === '-' || (c >= '0' && c <= '9'))) {
      out += number[1] === undefined && number[2] === undefined ? `"${number[0]}"` : number[0]
      i += number[0].length
      continue
    }
    out += c
    i++
  }
  return out
}

type Json = Record<string, unknown>

/** Why a fetch failed, in one line: undici hides the reason (ECONNREFUSED) in its cause. */
function describe(error: unknown): string {
  const e = error as { message?: string; cause?: { code?: string; message?: string } }
  const cause = e.cause?.code ?? e.cause?.message
  return `${(e.message ?? String(error)).split('\n')[0]}${cause ? ` (${cause})` : ''}`
}

async function call(target: string, init: RequestInit, p: PfsCall): Promise<{ status: number; body: Json | undefined }> {
  // Named without its query: the last-IOU query's signature has no place in a log line.
  const url = target.split('?')[0]!
  // One deadline for the request and the reading of its answer; the node stopping ends it too.
  const abort = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    abort.abort()
  }, p.timeoutMs)
  const stop = () => abort.abort()
  p.signal?.addEventListener('abort', stop)
  let text: string
  let status: number
  try {
    const response = await p.fetch(target, { ...init, signal: abort.signal })
    status = response.status
    text = await response.text()
  } catch (error) {
    if (timedOut) throw new PathfindingServiceError('timeout', `${url} did not answer within ${p.timeoutMs} ms`)
    throw new PathfindingServiceError('unreachable', `${url} cannot be reached: ${describe(error)}`, { cause: error })
  } finally {
    clearTimeout(timer)
    p.signal?.removeEventListener('abort', stop)
  }
  let body: unknown
  try {
    body = text.trim() === '' ? undefined : JSON.parse(integersAsStrings(text))
  } catch {
    throw new PathfindingServiceError('malformed', `${url} answered ${status} with what is not JSON: ${text.slice(0, 80)}`)
  }
  if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
    throw new PathfindingServiceError('malformed', `${url} answered ${status} with JSON that is not an object`)
  return { status, body: body as Json | undefined }
}

/** raiden-services' error answer `{errors, error_code, error_details}` as a PathfindingServiceError (`refused`). */
function refused(url: string, status: number, body: Json | undefined): PathfindingServiceError {
  const code = typeof body?.error_code === 'string' || typeof body?.error_code === 'number' ? Number(body.error_code) : undefined
  const errors = typeof body?.errors === 'string' ? body.errors : `HTTP ${status}`
  return new PathfindingServiceError(status >= 500 ? 'unreachable' : 'refused', `${url} answered ${status}: ${errors}`, {
    status,
    ...(code !== undefined ? { errorCode: code } : {}),
    ...(body?.error_details !== undefined ? { details: body.error_details } : {}),
  })
}

const bad = (url: string, what: string) => new PathfindingServiceError('malformed', `${url} answered without a valid ${what}`)

function integer(url: string, value: unknown, what: string): bigint {
  if (typeof value === 'string' && /^(0|[1-9]\d*)$/.test(value)) return BigInt(value)
  throw bad(url, what)
}

function address(url: string, value: unknown, what: string): Address {
  if (typeof value === 'string' && isAddress(value, { strict: false })) return getAddress(value)
  throw bad(url, what)
}

const text = (value: unknown) => (typeof value === 'string' ? value : '')

/** GET /api/v1/info. */
export async function pfsInfo(url: string, p: PfsCall): Promise<PfsInfo> {
  const endpoint = `${url}/api/v1/info`
  const { status, body } = await call(endpoint, { method: 'GET', headers: { accept: 'application/json' } }, p)
  if (status !== 200) throw refused(endpoint, status, body)
  const network = (body?.network_info ?? {}) as Json
  const confirmed = (network.confirmed_block ?? {}) as Json
  return {
    url,
    price: integer(endpoint, body?.price_info, 'price_info'),
    chainId: integer(endpoint, network.chain_id, 'network_info.chain_id'),
    tokenNetworkRegistry: address(endpoint, network.token_network_registry_address, 'network_info.token_network_registry_address'),
    userDeposit: address(endpoint, network.user_deposit_address, 'network_info.user_deposit_address'),
    paymentAddress: address(endpoint, body?.payment_address, 'payment_address'),
    confirmedBlock: confirmed.number === undefined ? 0n : integer(endpoint, confirmed.number, 'network_info.confirmed_block.number'),
    operator: text(body?.operator),
    message: text(body?.message),
    version: text(body?.version),
  }
}

function iouOf(url: string, value: unknown): SignedIou {
  const o = (value ?? {}) as Json
  const signature = o.signature
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(signature)) throw bad(url, 'last_iou.signature')
  return {
    sender: address(url, o.sender, 'last_iou.sender'),
    receiver: address(url, o.receiver, 'last_iou.receiver'),
    oneToNAddress: address(url, o.one_to_n_address, 'last_iou.one_to_n_address'),
    amount: integer(url, o.amount, 'last_iou.amount'),
    expirationBlock: integer(url, o.expiration_block, 'last_iou.expiration_block'),
    chainId: integer(url, o.chain_id, 'last_iou.chain_id'),
    signature: signature.toLowerCase() as Hex,
  }
}

/**
 * GET /api/v1/<token network>/payment/iou: the sender's IOU the service holds (its session's last), or undefined (404).
 * The query is signed by the sender: `sender || receiver || timestamp` (Raiden's get_last_iou).
 */
export async function pfsLastIou(
  url: string,
  tokenNetwork: Address,
  query: { sender: Address; receiver: Address; timestamp: string; signature: Hex },
  p: PfsCall,
): Promise<SignedIou | undefined> {
  const endpoint = `${url}/api/v1/${getAddress(tokenNetwork)}/payment/iou`
  const params = new URLSearchParams({
    sender: getAddress(query.sender),
    receiver: getAddress(query.receiver),
    timestamp: query.timestamp,
    signature: query.signature,
  })
  const { status, body } = await call(`${endpoint}?${params}`, { method: 'GET', headers: { accept: 'application/json' } }, p)
  if (status === 404 && body && 'last_iou' in body && body.last_iou === null) return undefined
  if (status !== 200) throw refused(endpoint, status, body)
  return iouOf(endpoint, body?.last_iou)
}

/** An IOU as Raiden's clients send it (IOU.as_json), amounts as decimal strings (which raiden-services reads too). */
export function iouBody(iou: SignedIou) {
  return {
    sender: getAddress(iou.sender),
    receiver: getAddress(iou.receiver),
    one_to_n_address: getAddress(iou.oneToNAddress),
    amount: iou.amount.toString(),
    expiration_block: iou.expirationBlock.toString(),
    chain_id: iou.chainId.toString(),
    signature: iou.signature,
  }
}

/** POST /api/v1/<token network>/paths: up to `maxPaths` routes from `from` to `to` for `value`, each with its estimated fee. */
export async function pfsPaths(
  url: string,
  tokenNetwork: Address,
  request: { from: Address; to: Address; value: bigint; maxPaths: number; iou?: SignedIou | undefined },
  p: PfsCall,
): Promise<PfsRoutes> {
  const endpoint = `${url}/api/v1/${getAddress(tokenNetwork)}/paths`
  const body = {
    from: getAddress(request.from),
    to: getAddress(request.to),
    value: request.value.toString(),
    max_paths: request.maxPaths,
    ...(request.iou ? { iou: iouBody(request.iou) } : {}),
  }
  const answer = await call(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }, p)
  if (answer.status !== 200) throw refused(endpoint, answer.status, answer.body)
  const result = answer.body?.result
  const token = answer.body?.feedback_token
  if (!Array.isArray(result) || typeof token !== 'string') throw bad(endpoint, 'result and feedback_token')
  const routes = result.map((r: Json) => {
    if (!Array.isArray(r?.path)) throw bad(endpoint, 'path')
    const route: PfsRoute = { path: r.path.map((hop: unknown) => address(endpoint, hop, 'path')), estimatedFee: signedInteger(endpoint, r.estimated_fee) }
    if (r.address_metadata !== undefined) route.addressMetadata = r.address_metadata
    return route
  })
  return { routes, feedbackToken: token }
}

/** An estimated fee may be negative (an imbalance penalty that pays, uncapped). */
function signedInteger(url: string, value: unknown): bigint {
  if (typeof value === 'string' && /^-?(0|[1-9]\d*)$/.test(value)) return BigInt(value)
  throw bad(url, 'estimated_fee')
}

/** POST /api/v1/<token network>/feedback: whether a route the service answered carried the payment (Raiden's post_pfs_feedback). */
export async function pfsFeedback(
  url: string,
  tokenNetwork: Address,
  feedback: { token: string; success: boolean; path: Address[] },
  p: PfsCall,
): Promise<void> {
  const endpoint = `${url}/api/v1/${getAddress(tokenNetwork)}/feedback`
  const body = { token: feedback.token, success: feedback.success, path: feedback.path.map((a) => getAddress(a)) }
  const { status, body: answer } = await call(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }, p)
  if (status !== 200) throw refused(endpoint, status, answer)
}
