import { getAddress, maxUint256, type Address, type Hex } from 'viem'
import { JsonNumber, parseJson, type JsonValue } from '../../api/json.ts'
import type { SignedIou } from '../iou.ts'
import { PfsAnswerError } from './errors.ts'
import type { RoutesRequest } from './service.ts'
import { hasCode } from '../../errors.ts'

/**
 * The pathfinding API's requests read as raiden-services' schemas read them (api.py's marshmallow dataclasses), with
 * the same refusal: `InvalidRequest` (2000) whose `error_details` names each field and what is wrong with it. Numbers
 * are read losslessly (an amount above 2^53 keeps its digits), as JSON integers or decimal strings (Raiden sends the
 * first, its light client the second); addresses must be EIP-55, as its ChecksumAddress field wants.
 */

type Issues = Record<string, string[]>

function addIssue(issues: Issues, key: string, message: string): void {
  const list = issues[key] ?? []
  list.push(message)
  issues[key] = list
}

const invalid = (issues: Issues) => new PfsAnswerError('InvalidRequest', 'Request parameter failed validation. See `error_details`.', issues)

class Reader {
  readonly issues: Issues = {}
  constructor(
    private readonly object: Record<string, JsonValue | string>,
    private readonly prefix = '',
  ) {}

  private issue(key: string, message: string): undefined {
    addIssue(this.issues, this.prefix + key, message)
    return undefined
  }

  has(key: string): boolean {
    return this.object[key] !== undefined && this.object[key] !== null
  }

  raw(key: string): JsonValue | string | undefined {
    return this.object[key] ?? undefined
  }

  address(key: string, required = true): Address | undefined {
    const value = this.object[key]
    if (value === undefined || value === null) return required ? this.issue(key, 'Missing data for required field.') : undefined
    if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(value) || getAddress(value) !== value)
      return this.issue(key, 'Not a valid checksummed address.')
    return value as Address
  }

  integer(key: string, { min = 0n, max = maxUint256, required = true }: { min?: bigint; max?: bigint; required?: boolean } = {}): bigint | undefined {
    const value = this.object[key]
    if (value === undefined || value === null) return required ? this.issue(key, 'Missing data for required field.') : undefined
    const text = value instanceof JsonNumber ? value.raw : typeof value === 'string' ? value : undefined
    if (text === undefined || !/^-?(0|[1-9]\d*)$/.test(text)) return this.issue(key, 'Not a valid integer.')
    const n = BigInt(text)
    if (n < min || n > max) return this.issue(key, `Must be greater than or equal to ${min} and less than or equal to ${max}.`)
    return n
  }

  number(key: string): number | undefined {
    const value = this.object[key]
    if (value === undefined || value === null) return undefined
    const text = value instanceof JsonNumber ? value.raw : typeof value === 'string' ? value : undefined
    const n = text === undefined ? Number.NaN : Number(text)
    if (text === undefined || text.trim() === '' || !Number.isFinite(n)) return this.issue(key, 'Not a valid number.')
    return n
  }

  boolean(key: string): boolean | undefined {
    const value = this.object[key]
    if (typeof value === 'boolean') return value
    return this.issue(key, value === undefined || value === null ? 'Missing data for required field.' : 'Not a valid boolean.')
  }

  signature(key: string): Hex | undefined {
    const value = this.object[key]
    if (value === undefined || value === null) return this.issue(key, 'Missing data for required field.')
    if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(value)) return this.issue(key, 'Not a valid 65-byte hex signature.')
    return value.toLowerCase() as Hex
  }

  /** Refuses the keys not in `known` (marshmallow's default, RAISE). */
  only(known: readonly string[]): void {
    for (const key of Object.keys(this.object)) if (!known.includes(key)) this.issue(key, 'Unknown field.')
  }

  done(): void {
    if (Object.keys(this.issues).length > 0) throw invalid(this.issues)
  }
}

/** A JSON object body, or InvalidRequest. */
export function readJsonObject(text: string): Record<string, JsonValue> {
  if (text.trim() === '') throw new PfsAnswerError('InvalidRequest', 'JSON payload expected')
  let json: JsonValue
  try {
    json = parseJson(text)
  } catch (error) {
    if (hasCode(error, 'JSON_SYNTAX')) throw new PfsAnswerError('InvalidRequest', `malformed JSON: ${(error as Error).message}`)
    throw error
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json) || json instanceof JsonNumber)
    throw new PfsAnswerError('InvalidRequest', 'JSON payload expected')
  return json
}

const ROUTE_FIELDS = ['from', 'to', 'value', 'max_paths', 'iou', 'diversity_penalty', 'fee_penalty', 'lock_timeout'] as const
const IOU_FIELDS = ['sender', 'receiver', 'one_to_n_address', 'amount', 'expiration_block', 'chain_id', 'signature'] as const

/** POST /<token network>/paths: from, to, value, max_paths, iou, diversity_penalty, fee_penalty, and our lock_timeout. */
export function readRoutesRequest(body: Record<string, JsonValue>): RoutesRequest {
  const r = new Reader(body)
  r.only(ROUTE_FIELDS)
  const from = r.address('from')
  const to = r.address('to')
  const value = r.integer('value', { min: 1n })
  const maxPaths = r.integer('max_paths', { min: 1n, max: 25n, required: false })
  const diversityPenalty = r.number('diversity_penalty')
  const feePenalty = r.number('fee_penalty')
  const lockTimeout = r.integer('lock_timeout', { min: 1n, required: false })
  let iou: SignedIou | undefined
  const rawIou = r.raw('iou')
  if (rawIou !== undefined && rawIou !== null) {
    if (typeof rawIou !== 'object' || Array.isArray(rawIou) || rawIou instanceof JsonNumber) addIssue(r.issues, 'iou', 'Invalid input type.')
    else {
      const i = new Reader(rawIou, 'iou.')
      i.only(IOU_FIELDS)
      const fields = {
        sender: i.address('sender'),
        receiver: i.address('receiver'),
        oneToNAddress: i.address('one_to_n_address'),
        amount: i.integer('amount'),
        expirationBlock: i.integer('expiration_block'),
        chainId: i.integer('chain_id'),
        signature: i.signature('signature'),
      }
      Object.assign(r.issues, i.issues)
      if (Object.keys(i.issues).length === 0) iou = fields as SignedIou
    }
  }
  r.done()
  return {
    from: from!,
    to: to!,
    value: value!,
    ...(maxPaths !== undefined ? { maxPaths: Number(maxPaths) } : {}),
    ...(diversityPenalty !== undefined ? { diversityPenalty } : {}),
    ...(feePenalty !== undefined ? { feePenalty } : {}),
    ...(lockTimeout !== undefined ? { lockTimeout } : {}),
    ...(iou ? { iou } : {}),
  }
}

/** GET /<token network>/payment/iou?sender&receiver&timestamp&signature. */
export function readIouRequest(url: string): { sender: Address; receiver: Address; timestamp: string; signature: Hex } {
  const params = new URL(url).searchParams
  const object: Record<string, string> = {}
  const r = new Reader(object)
  for (const [key, value] of params) {
    if (Object.hasOwn(object, key)) addIssue(r.issues, key, 'Given more than once.')
    object[key] = value
  }
  r.only(['sender', 'receiver', 'timestamp', 'signature'])
  const sender = r.address('sender')
  const receiver = r.address('receiver')
  const signature = r.signature('signature')
  const timestamp = object.timestamp
  if (timestamp === undefined) addIssue(r.issues, 'timestamp', 'Missing data for required field.')
  r.done()
  return { sender: sender!, receiver: receiver!, timestamp: timestamp!, signature: signature! }
}

/** POST /<token network>/feedback: token (a UUID, with or without dashes), success, path. */
export function readFeedbackRequest(body: Record<string, JsonValue>): { token: string; success: boolean; path: Address[] } {
  const r = new Reader(body)
  r.only(['token', 'success', 'path'])
  const rawToken = r.raw('token')
  const token = typeof rawToken === 'string' ? rawToken.replaceAll('-', '').toLowerCase() : undefined
  if (token === undefined || !/^[0-9a-f]{32}$/.test(token)) addIssue(r.issues, 'token', 'Not a valid UUID.')
  const success = r.boolean('success')
  const rawPath = r.raw('path')
  const path: Address[] = []
  if (!Array.isArray(rawPath)) addIssue(r.issues, 'path', rawPath === undefined ? 'Missing data for required field.' : 'Not a valid list.')
  else
    for (const [index, hop] of rawPath.entries()) {
      const a = new Reader({ [index]: hop }, 'path.').address(String(index))
      if (a) path.push(a)
      else addIssue(r.issues, 'path', `${index}: Not a valid checksummed address.`)
    }
  r.done()
  return { token: token!, success: success!, path }
}
