// valibot schemas as JSON Schema, for openapi.json only: @valibot/to-json-schema stays out of what the browser
// worker loads before it answers (openApiDocument.ts, which imports this, is loaded with import()).
import { toJsonSchema, type ConversionConfig } from '@valibot/to-json-schema'
import type * as v from 'valibot'
import type { Schema } from './schema.ts'

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
