import { expect, test } from 'vitest'
import { jsonParse, jsonStringify } from '../../../src/storage/json.ts'

test('bigints of any size and sign round-trip, wherever they are', () => {
  const value = { amount: 2n ** 255n, debt: -(2n ** 70n), zero: 0n, list: [1n, { deep: [3n] }], n: 1.5, s: '12', b: true, none: null }
  const text = jsonStringify(value)
  expect(jsonParse(text)).toEqual(value)
  expect(JSON.parse(text).amount).toEqual({ $bigint: (2n ** 255n).toString() })
})

test('objects that look like tags come back as the same objects, not as bigints', () => {
  const value = { a: { $bigint: '5' }, b: { $object: { x: 1n } }, c: { $bigint: '5', other: 1 }, d: [{ $object: 'x' }] }
  const text = jsonStringify(value)
  expect(jsonParse(text)).toEqual(value)
  expect(JSON.parse(text).a).toEqual({ $object: { $bigint: '5' } })
})

test('undefined fields are left out (as JSON does), undefined in arrays becomes null', () => {
  expect(jsonParse(jsonStringify({ a: undefined, b: [undefined, 1n] }))).toEqual({ b: [null, 1n] })
})

test('values JSON would silently drop or change are refused', () => {
  for (const bad of [{ f: () => 1 }, { m: new Map() }, { d: new Date(0) }, { n: Number.NaN }, { i: Infinity }, { s: Symbol('x') }, [new Uint8Array(1)]]) {
    expect(() => jsonStringify(bad)).toThrow(TypeError)
  }
  expect(() => jsonStringify({ a: { b: [{ f: () => 1 }] } })).toThrow(/\$\.a\.b\[0\]\.f/)
})

test('a malformed tag is a SyntaxError', () => {
  expect(() => jsonParse('{"$bigint":"12a"}')).toThrow(SyntaxError)
  expect(() => jsonParse('{"$bigint":12}')).toThrow(SyntaxError)
  expect(() => jsonParse('{"$object":[1]}')).toThrow(SyntaxError)
  expect(() => jsonParse('{not json')).toThrow(SyntaxError)
})

test('a "__proto__" key stays an ordinary field and never sets a prototype', () => {
  const parsed = jsonParse('{"__proto__":{"polluted":{"$bigint":"1"}}}') as Record<string, unknown>
  expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype)
  expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  expect(Object.getOwnPropertyDescriptor(parsed, '__proto__')?.value).toEqual({ polluted: 1n })
})
