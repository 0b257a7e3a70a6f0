import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JsonNumber, JsonSyntaxError, parseJson, type JsonValue } from '../../../src/api/json.ts'

/** What JSON.parse would give: each JsonNumber as the float of its text. */
const asJsonParse = (value: JsonValue): unknown => {
  if (value instanceof JsonNumber) return Number(value.raw)
  if (Array.isArray(value)) return value.map(asJsonParse)
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: asJsonParse(v), enumerable: true, writable: true, configurable: true })
    return out
  }
  return value
}

const syntaxError = (text: string): { message: string; position: number } => {
  try {
    parseJson(text)
  } catch (error) {
    expect(error).toBeInstanceOf(JsonSyntaxError)
    return { message: (error as JsonSyntaxError).message, position: (error as JsonSyntaxError).position }
  }
  throw new Error(`${JSON.stringify(text)} was accepted`)
}

describe('parseJson', () => {
  it('keeps the exact text of every number: integers above 2^53, fractions, exponents, -0', () => {
    const max = '115792089237316195423570985008687907853269984665640564039457584007913129639935'
    const body = parseJson(`{"amount":${max},"identifier":18446744073709551617,"f":0.1,"e":1e400,"E":-2.5E-3,"z":-0}`) as Record<string, JsonNumber>
    expect(Object.fromEntries(Object.entries(body).map(([k, v]) => [k, v.raw]))).toEqual({
      amount: max,
      identifier: '18446744073709551617',
      f: '0.1',
      e: '1e400',
      E: '-2.5E-3',
      z: '-0',
    })
    expect(JSON.stringify(body.f)).toBe('0.1')
  })

  it('gives what JSON.parse gives for any JSON text, numbers aside', () => {
    const texts = fc.oneof(
      fc.json(),
      fc.jsonValue().map((v) => JSON.stringify(v, null, '\t')),
      // Every character, so that escapes (control characters, lone surrogates) are written.
      fc.dictionary(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' })).map((v) => JSON.stringify(v, null, 1)),
    )
    fc.assert(
      fc.property(texts, (text) => {
        expect(asJsonParse(parseJson(text))).toEqual(JSON.parse(text))
      }),
      { numRuns: 300 },
    )
  })

  it('refuses with JsonSyntaxError whatever JSON.parse refuses (texts with a character dropped, added or changed)', () => {
    const edited = fc
      .tuple(fc.json(), fc.nat(), fc.constantFrom('drop', 'add', 'change'), fc.constantFrom(...'{}[],:"\\ 01-.eEtfnx\u0000\n'))
      .map(([text, i, how, c]) => {
        const at = i % (text.length + 1)
        return how === 'drop' ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + c + text.slice(at + (how === 'change' ? 1 : 0))
      })
    fc.assert(
      fc.property(edited, (text) => {
        let expected: unknown
        try {
          expected = JSON.parse(text)
        } catch {
          syntaxError(text)
          return
        }
        expect(asJsonParse(parseJson(text))).toEqual(expected)
      }),
      { numRuns: 1000 },
    )
  })

  it('keeps the last of a repeated key, at the first one’s place, as JSON.parse does', () => {
    const object = parseJson('{"a":1,"b":2,"a":3}') as Record<string, JsonNumber>
    expect(Object.keys(object)).toEqual(['a', 'b'])
    expect(object.a!.raw).toBe('3')
  })

  it('reads a "__proto__" key as an own property, never as the prototype', () => {
    const object = parseJson('{"__proto__":{"polluted":true}}') as Record<string, JsonValue>
    expect(Object.getPrototypeOf(object)).toBe(Object.prototype)
    expect(Object.hasOwn(object, '__proto__')).toBe(true)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('takes a value inside 64 others and refuses deeper, however deep, without exhausting the stack', () => {
    expect(parseJson(`${'['.repeat(65)}${']'.repeat(65)}`)).toBeInstanceOf(Array)
    expect(syntaxError(`${'['.repeat(66)}${']'.repeat(66)}`)).toEqual({ message: 'nested too deeply at position 65', position: 65 })
    expect(syntaxError('{"a":'.repeat(100_000)).message).toBe('nested too deeply at position 325')
  })

  it('names what is wrong and the position of the character at fault', () => {
    const cases: [string, string][] = [
      ['{"amount": ', 'unexpected end at position 11'],
      ['amount=1', 'unexpected "a" at position 0'],
      ['{} x', 'unexpected text after the value at position 3'],
      ['{"a":1,}', 'expected a string key at position 7'],
      ["{'a':1}", 'expected a string key at position 1'],
      ['{"a" 1}', "expected ':' at position 5"],
      ['{"a":01}', "expected ',' or '}' at position 6"],
      ['{"a":1.}', "expected ',' or '}' at position 6"],
      ['{"a":0x10}', "expected ',' or '}' at position 6"],
      ['[1 2]', "expected ',' or ']' at position 3"],
      ['{"a":NaN}', 'unexpected "N" at position 5'],
      ['{"a":+1}', 'unexpected "+" at position 5'],
      ['{"a":tru}', 'unexpected "t" at position 5'],
      ['{"a":"x\ny"}', 'control character in a string at position 7'],
      ['{"a":"x\\qy"}', 'bad escape in a string at position 7'],
      ['{"a":"\\u12"}', 'bad escape in a string at position 6'],
      ['{"a":"x', 'unterminated string at position 7'],
      ['\ufeff{}', 'unexpected "\ufeff" at position 0'],
      ['{\u00a0"a":1}', 'expected a string key at position 1'],
    ]
    for (const [text, message] of cases) expect(syntaxError(text).message, text).toBe(message)
  })
})
