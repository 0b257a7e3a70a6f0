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
const PLAIN_STRING = /"[^"\\\u0000-\u001f]*"/y
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
const STRING_PREFIX = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*/y
/** Deeper than any request we take; bounds the recursion on hostile input. */
const MAX_DEPTH = 64

/**
 * Parses strict JSON (RFC 8259) like JSON.parse, except that numbers become JsonNumber with their exact text. A
 * duplicate key keeps the last value (as JSON.parse and the Raiden node's Python do); an error names the position
 * of the character that is wrong.
 */
export function parseJson(text: string): JsonValue {
  let at = 0
  const skip = () => {
    let c = text.charCodeAt(at)
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = text.charCodeAt(++at)
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
  const expect = (char: string, what: string) => {
    if (text[at] !== char) fail(`expected ${what}`)
    at++
  }
  /** The string that starts at `at` (a '"'). */
  const string = (): string => {
    // Most strings have no escape: their text is the value.
    const plain = match(PLAIN_STRING)
    if (plain !== undefined) return plain.slice(1, -1)
    const start = at
    match(STRING_PREFIX)
    if (text[at] !== '"') fail(at >= text.length ? 'unterminated string' : text[at] === '\\' ? 'bad escape in a string' : 'control character in a string')
    at++
    return JSON.parse(text.slice(start, at)) as string
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
        if (text[at] !== '"') fail('expected a string key')
        const key = string()
        skip()
        expect(':', "':'")
        const item = value(depth + 1)
        // A key "__proto__" is an own property, as JSON.parse makes it, never the object's prototype.
        if (key === '__proto__') Object.defineProperty(object, key, { value: item, enumerable: true, writable: true, configurable: true })
        else object[key] = item
        skip()
        if (text[at] === '}') {
          at++
          return object
        }
        expect(',', "',' or '}'")
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
        if (text[at] === ']') {
          at++
          return array
        }
        expect(',', "',' or ']'")
      }
    }
    if (c === '"') return string()
    if (c === 't' && text.startsWith('true', at)) {
      at += 4
      return true
    }
    if (c === 'f' && text.startsWith('false', at)) {
      at += 5
      return false
    }
    if (c === 'n' && text.startsWith('null', at)) {
      at += 4
      return null
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
