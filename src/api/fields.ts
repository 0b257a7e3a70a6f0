import * as v from 'valibot'
import { getAddress, maxUint256, type Address, type Hex } from 'viem'
import { ApiError } from './errors.ts'
import { JsonNumber } from './json.ts'
import { decimalSchema } from './schema.ts'

/**
 * The request fields of the API as valibot schemas: each validates a value of a body or a query and, through
 * @valibot/to-json-schema (src/api/schema.ts), describes it in openapi.json, so the two cannot drift.
 * A field's message is what follows `name: ` in the answer (docs/rest-api.md); its status comes from the issue
 * (issueStatus).
 */
export type Field<T = unknown> = v.GenericSchema<unknown, T>

/** A body or a query: its fields by name. */
export type Shape = Record<string, Field>
/** What a shape reads to: an optional field given as null or absent is undefined. */
export type Parsed<S extends Shape> = { [K in keyof S]: Exclude<v.InferOutput<S[K]>, null> }

/**
 * The answer's status for an issue. A well-formed number outside a field's range is 409, as the Raiden node's
 * logic answers, never a 500: those issues, and only those, come from min_value and max_value. A field whose range
 * is part of its format (rangeStatus 400) checks it with `check`, which is 400 like every other issue.
 */
export function issueStatus(issue: v.BaseIssue<unknown>): 400 | 409 {
  return issue.type === 'min_value' || issue.type === 'max_value' ? 409 : 400
}

/** The first schema of every field: a value of another type is `what`, null is `may not be null` (null is absent only for an optional field). */
const typeMessage =
  (what: string) =>
  (issue: v.BaseIssue<unknown>): string =>
    issue.input === null ? 'may not be null' : what

const DECIMAL = /^(0|[1-9]\d*)$/
const NEGATIVE = /^-(0|[1-9]\d*)$/

/** The digits of an integer given as a JSON integer (JsonNumber keeps its text) or a decimal string, else undefined. */
function integerText(value: unknown): string | undefined {
  const text = value instanceof JsonNumber ? value.raw : typeof value === 'string' ? value : undefined
  return text !== undefined && (DECIMAL.test(text) || NEGATIVE.test(text)) ? text : undefined
}

/**
 * An integer as a JSON integer or a decimal string. A fraction, an exponent, hex or any other type is 400;
 * a well-formed integer outside [min, max] (a negative amount, one above uint256) is `rangeStatus` (409 by
 * default, as the Raiden node's logic answers), never a 500. `documentedMin` is the minimum openapi.json shows
 * when it differs from the one parsed (a negative amount left for the node's own check).
 */
export function integer({
  min = 0n,
  max = maxUint256,
  rangeStatus = 409,
  description,
  documentedMin = min,
}: {
  min?: bigint
  max?: bigint
  rangeStatus?: 400 | 409
  description?: string
  documentedMin?: bigint
} = {}): Field<bigint> {
  const atLeast = `must be at least ${min}`
  const atMost = `must be at most ${max}`
  const read = v.pipe(
    v.custom<JsonNumber | string>((value) => integerText(value) !== undefined, typeMessage('not a valid integer (a JSON integer or a decimal string)')),
    v.metadata({ oneOf: [decimalSchema, { type: 'integer', minimum: Number(documentedMin) }], ...(description ? { description } : {}) }),
    v.transform((value) => BigInt(integerText(value)!)),
  )
  return rangeStatus === 409
    ? v.pipe(read, v.minValue(min, atLeast), v.maxValue(max, atMost))
    : v.pipe(
        read,
        v.check((n) => n >= min, atLeast),
        v.check((n) => n <= max, atMost),
      )
}

/** A number in [min, max], fractions allowed (joinable_funds_target); out of range is 409. */
export function fraction({ min = 0, max = 1 }: { min?: number; max?: number } = {}): Field<number> {
  const between = `must lie between ${min} and ${max}`
  return v.pipe(
    v.custom<JsonNumber | string>(
      (value) => value instanceof JsonNumber || (typeof value === 'string' && /^\d+(\.\d+)?$/.test(value)),
      typeMessage('not a valid number'),
    ),
    v.metadata({ type: 'number', minimum: min, maximum: max }),
    v.transform((value) => Number(value instanceof JsonNumber ? value.raw : value)),
    v.check((n: number) => Number.isFinite(n), 'not a valid number'),
    v.minValue(min, between),
    v.maxValue(max, between),
  )
}

const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000'

/** An EIP-55 address in a body: any other form is 400 (the Raiden node's AddressField), the zero address too. */
export function address({ allowZero = false }: { allowZero?: boolean } = {}): Field<Address> {
  const eip55 = 'not a valid EIP55 encoded address'
  return v.pipe(
    v.string(typeMessage('not a string')),
    v.check((value) => /^0[xX]/.test(value), 'not a valid hex encoded address, must be 0x prefixed'),
    v.regex(/^0x[0-9a-fA-F]{40}$/, eip55),
    v.check((value) => getAddress(value) === value, eip55),
    v.check((value) => allowZero || value !== ZERO_ADDRESS, `the ${ZERO_ADDRESS} address is not accepted`),
    v.description('EIP-55 checksummed address'),
    v.transform((value) => value as Address),
  )
}

/** 32 bytes as 0x-prefixed hex (a secret or a secret hash); returned lowercase. */
export function bytes32(): Field<Hex> {
  return v.pipe(
    v.string(typeMessage('not a string')),
    v.check((value) => /^0[xX]/.test(value), 'not a valid hex encoded value, must be 0x prefixed'),
    v.check((value) => /^0[xX][0-9a-fA-F]*$/.test(value), 'not valid hex, contains invalid characters'),
    // Prefix and digits are checked above: what this pattern can still refuse is the length.
    v.regex(/^0[xX][0-9a-fA-F]{64}$/, 'not 32 bytes long'),
    v.transform((value) => value.toLowerCase() as Hex),
  )
}

/** Any string of at most `maxLength` characters: an opaque token the node gave (an event id). */
export function text({ maxLength, description }: { maxLength: number; description?: string }): Field<string> {
  return v.pipe(
    v.string(typeMessage('not a string')),
    v.maxLength(maxLength, `longer than ${maxLength} characters`),
    v.metadata(description ? { description } : {}),
  )
}

export function oneOf<const T extends string>(values: readonly T[]): Field<T> {
  return v.picklist(values, (issue) => (typeof issue.input === 'string' ? `must be one of: ${values.join(', ')}` : typeMessage('not a string')(issue)))
}

/** A field that may be absent or null: both read as undefined (Parsed). */
export function optional<T>(field: Field<T>): Field<T | null | undefined> {
  return v.nullish(field)
}

/**
 * A body or query of the fields of `shape` and nothing else: a key not in it is 400 `<key>: unknown field`, a
 * required one absent is `<key>: missing data for required field`.
 */
export function strictShape<S extends Shape>(shape: S) {
  return v.strictObject(shape, (issue) => (issue.expected === 'never' ? 'unknown field' : 'missing data for required field'))
}

/**
 * Reads `object` against `shape`: the ApiError of the first issue (a key not in the shape before any field, then the
 * fields in the shape's order, as the Raiden node reports them), or the fields, null read as undefined.
 */
export function parseShape<S extends Shape>(object: Record<string, unknown>, shape: S): Parsed<S> {
  const result = v.safeParse(strictShapeOf(shape), object, { abortPipeEarly: true })
  if (!result.success) {
    const issue = result.issues.find((i) => i.type === 'strict_object' && i.expected === 'never') ?? result.issues[0]
    const key = issue.path?.[0]?.key
    throw new ApiError(issueStatus(issue), `${String(key)}: ${issue.message}`)
  }
  const output: Record<string, unknown> = result.output
  const out: Record<string, unknown> = {}
  for (const name of Object.keys(shape)) out[name] = output[name] ?? undefined
  return out as Parsed<S>
}

// One strict object per shape, built on first use: shapes are module constants.
const strictShapes = new WeakMap<Shape, v.GenericSchema<unknown, Record<string, unknown>>>()
function strictShapeOf(shape: Shape) {
  const known = strictShapes.get(shape)
  if (known) return known
  const schema = strictShape(shape)
  strictShapes.set(shape, schema)
  return schema
}
