import * as v from 'valibot'

/** A JSON Schema (OpenAPI 3.1 dialect) fragment. */
export type Schema = Record<string, unknown>
/** The JSON Schemas of the API's two commonest strings: an address, and a uint as decimal digits (docs/rest-api.md). */
export const addressSchema: Schema = { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' }
export const decimalSchema: Schema = { type: 'string', pattern: '^(0|[1-9][0-9]*)$' }

/** The same two strings in an answer, as valibot schemas: their JSON Schemas are the two above. */
export const addressString = v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/))
export const decimalString = v.pipe(v.string(), v.regex(/^(0|[1-9][0-9]*)$/))
/** 32 bytes as lowercase hex in an answer: a secret, a secret hash, a transaction hash. */
export const hex32String = v.pipe(v.string(), v.regex(/^0x[0-9a-f]{64}$/))

/** Whether a route's answer schema is a valibot schema (converted for openapi.json) or a JSON Schema written as such. */
export const isValibot = (schema: Schema | v.GenericSchema): schema is v.GenericSchema => '~standard' in schema
