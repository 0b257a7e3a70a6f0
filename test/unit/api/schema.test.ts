import { describe, expect, it } from 'vitest'
import { addressSchema, addressString, isValibot } from '../../../src/api/schema.ts'

describe("answers' schemas", () => {
  it('tells a valibot schema from a JSON Schema written as such', () => {
    expect(isValibot(addressString)).toBe(true)
    expect(isValibot(addressSchema)).toBe(false)
  })
})
