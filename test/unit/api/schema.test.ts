import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { addressSchema, addressString, decimalSchema, decimalString, isValibot, jsonSchemaOf } from '../../../src/api/schema.ts'

describe('JSON Schemas of valibot schemas (openapi.json)', () => {
  it("gives the answers' strings the JSON Schemas written for them, without $schema or an empty required", () => {
    expect(jsonSchemaOf(addressString)).toEqual(addressSchema)
    expect(jsonSchemaOf(decimalString)).toEqual(decimalSchema)
    expect(jsonSchemaOf(v.object({ a: v.optional(v.string()) }))).toEqual({ type: 'object', properties: { a: { type: 'string' } } })
  })

  it('tells a valibot schema from a JSON Schema written as such', () => {
    expect(isValibot(addressString)).toBe(true)
    expect(isValibot(addressSchema)).toBe(false)
  })
})
