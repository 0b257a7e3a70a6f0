import type { Env, MiddlewareHandler } from 'hono'
import { validator } from 'hono/validator'
import { getAddress, type Address } from 'viem'
import { ApiError } from './errors.ts'
import { parseShape, type Parsed, type Shape } from './fields.ts'
import { JsonNumber, parseJson, type JsonValue } from './json.ts'
import { hasCode } from '../errors.ts'

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
    if (hasCode(error, 'JSON_SYNTAX')) throw new ApiError(400, `malformed JSON: ${(error as Error).message}`)
    throw error
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json) || json instanceof JsonNumber)
    throw new ApiError(400, 'JSON payload expected: the body must be a JSON object')
  if (Object.keys(json).length === 0) throw new ApiError(400, 'JSON payload expected')
  return parseShape(json, shape)
}

/** Query parameters against a shape of fields (their values are strings); unknown keys are 400, a key given twice too. */
export function readQuery<S extends Shape>(url: string, shape: S): Parsed<S> {
  const params = new URL(url).searchParams
  const object: Record<string, string> = {}
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

/**
 * Validates the JSON body against `shape` before the handler, which reads it typed with `c.req.valid('json')`.
 * Not hono/validator's `validator('json')`: it reads the body with JSON.parse, which loses the digits of an amount
 * above 2^53, and answers an empty or malformed body with its own 400; this reads it with parseJson (readBody).
 */
export function jsonBody<S extends Shape>(shape: S): MiddlewareHandler<Env, string, { in: { json: Record<string, unknown> }; out: { json: Parsed<S> } }> {
  return async (c, next) => {
    c.req.addValidatedData('json', await readBody(c.req.raw, shape))
    await next()
  }
}

/** Validates the query against `shape` before the handler (`c.req.valid('query')`); read from the URL, as a key given twice is 400. */
export function queryOf<S extends Shape>(shape: S) {
  return validator('query', (_value, c): Parsed<S> => readQuery(c.req.url, shape))
}
