import { toJsonSchema, type ConversionConfig } from '@valibot/to-json-schema'
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

/**
 * How valibot schemas become JSON Schema. For a request field (src/api/fields.ts) it is what a client sends, so
 * conversion stops at the field's first transformation; checks that JSON Schema cannot say (a checksum, the zero
 * address) are left out. The answers' schemas have neither.
 */
const conversion: ConversionConfig = {
  target: 'draft-2020-12',
  typeMode: 'input',
  ignoreActions: ['check'],
  overrideSchema: ({ valibotSchema, jsonSchema }) => {
    // A number read losslessly (JsonNumber) or a string: the field's metadata says which JSON it takes.
    if (valibotSchema.type === 'custom') return {}
    // Null reads as absent: an optional field is documented as its value, and left out of `required`.
    if (valibotSchema.type === 'nullish') return (jsonSchema.anyOf as Schema[])[0]
    return undefined
  },
}

/** The JSON Schema of a valibot schema, as a fragment of openapi.json (no `$schema` of its own, no empty `required`). */
export function jsonSchemaOf(schema: v.GenericSchema): Schema {
  const { $schema: _, ...json } = toJsonSchema(schema, conversion) as Schema
  if (Array.isArray(json.required) && json.required.length === 0) delete json.required
  return json
}
