import { SluiceError } from '../errors.ts'
/**
 * A number as it was written in the request. JSON.parse turns 2^256-1 into a float and loses digits, so the
 * API reads bodies with `parseJson`, which keeps each number's text and lets the field parser judge it.
 */
export class JsonNumber {
  constructor(readonly raw: string) {}
  toJSON(): number {
    return Number(this.raw)
  }
}

export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | { [key: string]: JsonValue }

export class JsonSyntaxError extends SluiceError {
  override name = 'JsonSyntaxError' as const
  override readonly code = 'JSON_SYNTAX' as const
  constructor(
    message: string,
    readonly position: number,
  ) {
    super(`${message} at position ${position}`)
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON forbids raw control characters in a string: these are what it rejects.
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y
const WHITESPACE = /[ \t\n\r]*/y
const LITERALS = [
  ['true', true],
  ['false', false],
  ['null', null],
] as const
/** Deeper than any request we take; bounds the recursion on hostile input. */
const MAX_DEPTH = 64

/** Parses strict JSON (RFC 8259) like JSON.parse, except that numbers become JsonNumber with their exact text. */
export function parseJson(text: string): JsonValue {
  let at = 0
  const skip = () => {
    WHITESPACE.lastIndex = at
    WHITESPACE.exec(text)
    at = WHITESPACE.lastIndex
  }
  const fail = (message: string): never => {
    throw new JsonSyntaxError(message, at)
  }
  const match = (re: RegExp): string | undefined => {
    re.lastIndex = at
    const m = re.exec(text)
    if (!m) return undefined
    at = re.lastIndex
    return m[0]
  }
  const value = (depth: number): JsonValue => {
    if (depth > MAX_DEPTH) fail('nested too deeply')
    skip()
    const c = text[at]
    if (c === '{') {
      at++
      const object: { [key: string]: JsonValue } = {}
      skip()
      if (text[at] === '}') {
        at++
        return object
      }
      for (;;) {
        skip()
        const key = match(STRING) ?? fail('expected a string key')
        skip()
        if (text[at++] !== ':') fail("expected ':'")
        Object.defineProperty(object, JSON.parse(key) as string, { value: value(depth + 1), enumerable: true, writable: true, configurable: true })
        skip()
        const next = text[at++]
        if (next === '}') return object
        if (next !== ',') fail("expected ',' or '}'")
      }
    }
    if (c === '[') {
      at++
      const array: JsonValue[] = []
      skip()
      if (text[at] === ']') {
        at++
        return array
      }
      for (;;) {
        array.push(value(depth + 1))
        skip()
        const next = text[at++]
        if (next === ']') return array
        if (next !== ',') fail("expected ',' or ']'")
      }
    }
    if (c === '"') return JSON.parse(match(STRING) ?? fail('bad string')) as string
    for (const [word, value] of LITERALS) {
      if (text.startsWith(word, at)) {
        at += word.length
        return value
      }
    }
    const number = match(NUMBER)
    if (number !== undefined) return new JsonNumber(number)
    return fail(at >= text.length ? 'unexpected end' : `unexpected ${JSON.stringify(c)}`)
  }
  const result = value(0)
  skip()
  if (at !== text.length) fail('unexpected text after the value')
  return result
}
