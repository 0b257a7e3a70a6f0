import { getAddress, isAddress, maxUint256, type Address, type Hex } from 'viem'
import { ApiError } from './errors.ts'
import { JsonNumber, JsonSyntaxError, parseJson, type JsonValue } from './json.ts'

/** A JSON Schema (OpenAPI 3.1 dialect) fragment. */
export type Schema = Record<string, unknown>
/** The JSON Schemas of the API's two commonest strings: an address, and a uint as decimal digits (docs/rest-api.md). */
export const addressSchema: Schema = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' }
export const decimalSchema: Schema = { type: 'string', pattern: '^(0|[1-9][0-9]*)$' }

/**
 * One request field: how to read it (throwing ApiError with the status the spec gives) and how it is
 * documented. The same object validates the request and describes it in openapi.json, so they cannot drift.
 */
export type Field<T> = {
  parse(value: JsonValue, name: string): T
  schema: Schema
  /** Absent and null read as undefined. */
  optional?: boolean
}

export type Shape = Record<string, Field<unknown>>
export type Parsed<S extends Shape> = {
  [K in keyof S]: S[K] extends Field<infer T> ? (S[K]['optional'] extends true ? T | undefined : T) : never
}

const invalid = (name: string, what: string) => new ApiError(400, `${name}: ${what}`)

const DECIMAL = /^(0|[1-9]\d*)$/
const NEGATIVE = /^-(0|[1-9]\d*)$/

/**
 * An integer as a JSON integer or a decimal string. A fraction, an exponent, hex or any other type is 400;
 * a well-formed integer outside [min, max] (a negative amount, one above uint256) is `rangeStatus` (409 by
 * default, as the Raiden node's logic answers), never a 500.
 */
export function integer({
  min = 0n,
  max = maxUint256,
  rangeStatus = 409,
  description,
}: {
  min?: bigint
  max?: bigint
  rangeStatus?: 400 | 409
  description?: string
} = {}): Field<bigint> {
  return {
    schema: {
      oneOf: [decimalSchema, { type: 'integer', minimum: Number(min) }],
      ...(description ? { description } : {}),
    },
    parse(value, name) {
      const text = value instanceof JsonNumber ? value.raw : typeof value === 'string' ? value : undefined
      if (text === undefined || !(DECIMAL.test(text) || NEGATIVE.test(text))) throw invalid(name, 'not a valid integer (a JSON integer or a decimal string)')
      const n = BigInt(text)
      if (n < min) throw new ApiError(rangeStatus, `${name}: must be at least ${min}`)
      if (n > max) throw new ApiError(rangeStatus, `${name}: must be at most ${max}`)
      return n
    },
  }
}

/** A number in [min, max], fractions allowed (joinable_funds_target). */
export function fraction({ min = 0, max = 1 }: { min?: number; max?: number } = {}): Field<number> {
  return {
    schema: { type: 'number', minimum: min, maximum: max },
    parse(value, name) {
      const n = value instanceof JsonNumber ? Number(value.raw) : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN
      if (!Number.isFinite(n)) throw invalid(name, 'not a valid number')
      if (n < min || n > max) throw new ApiError(409, `${name}: must lie between ${min} and ${max}`)
      return n
    },
  }
}

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000'

/** An EIP-55 address in a body: any other form is 400 (the Raiden node's AddressField), the zero address too. */
export function address({ allowZero = false }: { allowZero?: boolean } = {}): Field<Address> {
  return {
    schema: { ...addressSchema, description: 'EIP-55 checksummed address' },
    parse(value, name) {
      if (typeof value !== 'string') throw invalid(name, 'not a string')
      if (!/^0[xX]/.test(value)) throw invalid(name, 'not a valid hex encoded address, must be 0x prefixed')
      if (!isAddress(value, { strict: true }) || getAddress(value) !== value) throw invalid(name, 'not a valid EIP55 encoded address')
      if (!allowZero && value === ZERO_ADDRESS) throw invalid(name, `the ${ZERO_ADDRESS} address is not accepted`)
      return value as Address
    },
  }
}

/** 32 bytes as 0x-prefixed hex (a secret or a secret hash); returned lowercase. */
export function bytes32(): Field<Hex> {
  return {
    schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' },
    parse(value, name) {
      if (typeof value !== 'string') throw invalid(name, 'not a string')
      if (!/^0[xX]/.test(value)) throw invalid(name, 'not a valid hex encoded value, must be 0x prefixed')
      if (!/^0[xX][0-9a-fA-F]*$/.test(value)) throw invalid(name, 'not valid hex, contains invalid characters')
      if (value.length !== 66) throw invalid(name, 'not 32 bytes long')
      return value.toLowerCase() as Hex
    },
  }
}

/** Any string of at most `maxLength` characters: an opaque token the node gave (an event id). */
export function text({ maxLength, description }: { maxLength: number; description?: string }): Field<string> {
  return {
    schema: { type: 'string', maxLength, ...(description ? { description } : {}) },
    parse(value, name) {
      if (typeof value !== 'string') throw invalid(name, 'not a string')
      if (value.length > maxLength) throw invalid(name, `longer than ${maxLength} characters`)
      return value
    },
  }
}

export function oneOf<const T extends string>(values: readonly T[]): Field<T> {
  return {
    schema: { type: 'string', enum: [...values] },
    parse(value, name) {
      if (typeof value !== 'string') throw invalid(name, 'not a string')
      if (!(values as readonly string[]).includes(value)) throw invalid(name, `must be one of: ${values.join(', ')}`)
      return value as T
    },
  }
}

export function optional<T>(field: Field<T>): Field<T> & { optional: true } {
  return { ...field, optional: true }
}

/** Reads every field of `shape` from `object`; a key not in the shape is 400. */
export function parseShape<S extends Shape>(object: Record<string, JsonValue>, shape: S): Parsed<S> {
  for (const key of Object.keys(object)) if (!Object.hasOwn(shape, key)) throw new ApiError(400, `${key}: unknown field`)
  const out: Record<string, unknown> = {}
  for (const [name, field] of Object.entries(shape)) {
    const value = Object.hasOwn(object, name) ? object[name] : undefined
    if (value === undefined || value === null) {
      if (!field.optional) throw invalid(name, value === null ? 'may not be null' : 'missing data for required field')
      out[name] = undefined
      continue
    }
    out[name] = field.parse(value, name)
  }
  return out as Parsed<S>
}

/** Whether a Content-Type is JSON's: `application/json` in any case, parameters (`; charset=utf-8`) allowed. */
export function isJsonMediaType(contentType: string): boolean {
  return contentType.split(';', 1)[0]!.trim().toLowerCase() === 'application/json'
}

/**
 * Refuses with 415 a request (other than GET and HEAD) with a Content-Type that is not JSON's, or with a body and
 * no Content-Type; one without either (`curl -X POST .../shutdown`) passes. A web page can send text/plain, a form
 * or a bare body anywhere without asking the server first, but never application/json (docs/decisions/0025).
 */
export async function checkBodyMediaType(request: Request): Promise<void> {
  if (request.method === 'GET' || request.method === 'HEAD') return
  const contentType = request.headers.get('content-type')
  if (contentType !== null) {
    if (!isJsonMediaType(contentType)) throw unsupportedMediaType(`a body of type ${JSON.stringify(contentType)} is not accepted`)
    return
  }
  if (await carriesBody(request)) throw unsupportedMediaType('a body without a Content-Type is not accepted')
}

const unsupportedMediaType = (why: string) => new ApiError(415, `${why}: send JSON with Content-Type: application/json`, { code: 'UNSUPPORTED_MEDIA_TYPE' })

async function carriesBody(request: Request): Promise<boolean> {
  // Over HTTP/1.1 a body is announced; a Request built in a browser (the page's worker) announces nothing.
  const length = request.headers.get('content-length')
  if (length !== null) return !/^0+$/.test(length.trim())
  if (request.body === null) return false
  return (await request.clone().arrayBuffer()).byteLength > 0
}

/**
 * The JSON object body of a request (its Content-Type was checked before: checkBodyMediaType). Empty, `{}`-like
 * falsy or unparsable bodies are 400, like anything that is not an object.
 */
export async function readBody<S extends Shape>(request: Request, shape: S): Promise<Parsed<S>> {
  const text = await request.text()
  if (text.trim() === '') throw new ApiError(400, 'JSON payload expected')
  let json: JsonValue
  try {
    json = parseJson(text)
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new ApiError(400, `malformed JSON: ${error.message}`)
    throw error
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json) || json instanceof JsonNumber)
    throw new ApiError(400, 'JSON payload expected: the body must be a JSON object')
  if (Object.keys(json).length === 0) throw new ApiError(400, 'JSON payload expected')
  return parseShape(json, shape)
}

/** Query parameters against a shape of fields (their values are strings); unknown keys are 400. */
export function readQuery<S extends Shape>(url: string, shape: S): Parsed<S> {
  const params = new URL(url).searchParams
  const object: Record<string, JsonValue> = {}
  for (const [key, value] of params) {
    if (Object.hasOwn(object, key)) throw new ApiError(400, `${key}: given more than once`)
    object[key] = value
  }
  return parseShape(object, shape)
}

/** An address in a path: anything but its EIP-55 form is 404, as the spec says. */
export function pathAddress(value: string, name: string): Address {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) throw new ApiError(404, `invalid endpoint: ${name} is not a 0x-prefixed hex address`)
  if (getAddress(value) !== value) throw new ApiError(404, `invalid endpoint: ${name} is not a valid EIP55 encoded address`)
  return value as Address
}
