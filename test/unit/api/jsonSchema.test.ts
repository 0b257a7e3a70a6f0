import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { jsonSchemaOf } from '../../../src/api/jsonSchema.ts'
import { addressSchema, addressString, decimalSchema, decimalString } from '../../../src/api/schema.ts'

describe('JSON Schemas of valibot schemas (openapi.json)', () => {
  it("gives the answers' strings the JSON Schemas written for them, without $schema or an empty required", () => {
    expect(jsonSchemaOf(addressString)).toEqual(addressSchema)
    expect(jsonSchemaOf(decimalString)).toEqual(decimalSchema)
    expect(jsonSchemaOf(v.object({ a: v.optional(v.string()) }))).toEqual({ type: 'object', properties: { a: { type: 'string' } } })
  })
})
