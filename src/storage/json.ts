/**
 * JSON that keeps bigints: a bigint becomes `{"$bigint":"<decimal>"}`. A plain object that would read as such a
 * tag (its only key is `$bigint` or `$object`) is wrapped as `{"$object":{...}}`, so every value round-trips.
 * Only plain data is accepted (objects, arrays, strings, finite numbers, booleans, null, bigints); anything else
 * throws instead of being silently dropped or changed, as JSON.stringify would.
 */
export function jsonStringify(value: unknown, space?: number): string {
  return JSON.stringify(encode(value, '$'), null, space)
}

/** Parses text written by `jsonStringify` (or any JSON), turning `$bigint` tags back into bigints. */
export function jsonParse(text: string): unknown {
  return decode(JSON.parse(text), '$')
}

const TAGS = new Set(['$bigint', '$object'])

function isTagLike(value: object): boolean {
  const keys = Object.keys(value)
  return keys.length === 1 && TAGS.has(keys[0]!)
}

function encode(value: unknown, path: string): unknown {
  switch (typeof value) {
    case 'bigint':
      return { $bigint: value.toString() }
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot encode ${value} at ${path} as JSON`)
      return value
    case 'string':
    case 'boolean':
      return value
    case 'object': {
      if (value === null) return null
      if (Array.isArray(value)) return value.map((v, i) => (v === undefined ? null : encode(v, `${path}[${i}]`)))
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null)
        throw new TypeError(`cannot encode a ${proto?.constructor?.name ?? 'non-plain object'} at ${path} as JSON`)
      const entries = Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, encode(v, `${path}.${k}`)])
      const encoded = Object.fromEntries(entries)
      return isTagLike(value) ? { $object: encoded } : encoded
    }
    default:
      throw new TypeError(`cannot encode a ${typeof value} at ${path} as JSON`)
  }
}

function decode(value: unknown, path: string): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) return value.map((v, i) => decode(v, `${path}[${i}]`))
  const record = value as Record<string, unknown>
  if (isTagLike(record)) {
    if ('$bigint' in record) {
      const digits = record.$bigint
      if (typeof digits !== 'string' || !/^-?\d+$/.test(digits)) throw new SyntaxError(`invalid $bigint at ${path}: ${JSON.stringify(digits)}`)
      return BigInt(digits)
    }
    const inner = record.$object
    if (typeof inner !== 'object' || inner === null || Array.isArray(inner)) throw new SyntaxError(`invalid $object at ${path}`)
    return decodeEntries(inner as Record<string, unknown>, path)
  }
  return decodeEntries(record, path)
}

// fromEntries defines own properties, so a "__proto__" key stays data and never sets a prototype.
function decodeEntries(record: Record<string, unknown>, path: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, decode(v, `${path}.${k}`)]))
}
