import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { SluiceError } from '../../../src/errors.ts'
import { fillMessage, formatJson, formatPretty, LOG_LEVELS, type LogRecord } from '../../../src/log/format.ts'

/** Records as formatted (src/log/format.ts): one JSON object a line for machines, `HH:MM:SS.mmm LEVEL msg k=v` for a person. */

class NoRouteError extends SluiceError {
  override name = 'NoRouteError' as const
  override readonly code = 'NO_ROUTE' as const
}

/** Any field value: nested objects and arrays, bigints, dates, objects without a prototype, sparse arrays, errors. */
const values = fc.oneof(
  fc.anything({ maxDepth: 3, withBigInt: true, withDate: true, withNullPrototype: true, withSparseArray: true }),
  fc.string({ unit: 'binary' }).map((message) => new Error(message)),
)

const TIME = Date.UTC(2026, 10, 28, 7, 5, 9, 42)
const record = (over: Partial<LogRecord> = {}): LogRecord => ({ time: TIME, level: 'info', msg: 'payment sent', fields: {}, ...over })

/** The local clock of `time` as the pretty format shows it (the test runs in any time zone). */
const clock = (time: number) => {
  const d = new Date(time)
  const two = (n: number) => String(n).padStart(2, '0')
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`
}

describe('formatJson', () => {
  test('time in ISO 8601 (UTC), the level as a word, the message, then the fields', () => {
    const line = formatJson(record({ level: 'warn', fields: { where: 'chain sync', attempt: 3, ok: false, none: null } }))
    expect(line).toBe('{"time":"2026-11-28T07:05:09.042Z","level":"warn","msg":"payment sent","where":"chain sync","attempt":3,"ok":false,"none":null}')
  })

  test('bigints as decimal strings, also inside objects and arrays; undefined fields left out', () => {
    const parsed = JSON.parse(formatJson(record({ fields: { amount: 10n ** 30n, channel: { id: -7n }, ids: [1n, 2n], gone: undefined } })))
    expect(parsed.amount).toBe('1000000000000000000000000000000')
    expect(parsed.channel).toEqual({ id: '-7' })
    expect(parsed.ids).toEqual(['1', '2'])
    expect('gone' in parsed).toBe(false)
  })

  test("errors as { name, code, message }: our errors' code, INTERNAL for others, a system error's own code; causes and details kept", () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8545'), { code: 'ECONNREFUSED' })
    const ours = new NoRouteError('no route to the target', { details: 'tried 2 partners', cause: new TypeError('fetch failed', { cause }) })
    const parsed = JSON.parse(formatJson(record({ fields: { error: ours, other: new RangeError('first line\nsecond line') } })))
    expect(parsed.error).toEqual({
      name: 'NoRouteError',
      code: 'NO_ROUTE',
      message: 'no route to the target',
      details: 'tried 2 partners',
      cause: {
        name: 'TypeError',
        code: 'INTERNAL',
        message: 'fetch failed',
        cause: { name: 'Error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:8545' },
      },
    })
    // Never the stack; only the first line of another library's message (viem's carry whole requests).
    expect(parsed.other).toEqual({ name: 'RangeError', code: 'INTERNAL', message: 'first line' })
  })

  test('a field named like a core key does not hide it; circles and dates are written, not thrown on', () => {
    const circle: Record<string, unknown> = { name: 'a' }
    circle.self = circle
    const shared = { x: 1 }
    const parsed = JSON.parse(formatJson(record({ fields: { msg: 'mine', time: 1, _time: 2, circle, pair: [shared, shared], at: new Date(TIME) } })))
    expect(parsed).toMatchObject({ msg: 'payment sent', _msg: 'mine', time: '2026-11-28T07:05:09.042Z', _time: 1, __time: 2 })
    expect(parsed.circle).toEqual({ name: 'a', self: '[Circular]' })
    expect(parsed.pair).toEqual([{ x: 1 }, { x: 1 }])
    expect(parsed.at).toBe('2026-11-28T07:05:09.042Z')
  })

  test('whatever the message and fields: one line of valid JSON with time, level and msg as given', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...LOG_LEVELS),
        // No `{`: a message with `{name}` of a field is a template (its own test below).
        fc.string({ unit: 'binary' }).filter((msg) => !msg.includes('{')),
        fc.dictionary(fc.string({ unit: 'binary' }), values, { maxKeys: 8 }),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        (level, msg, fields, time) => {
          const line = formatJson({ time, level, msg, fields })
          expect(line).not.toMatch(/[\n\r]/)
          const parsed = JSON.parse(line)
          expect(parsed.time).toBe(new Date(time).toISOString())
          expect(parsed.level).toBe(level)
          expect(parsed.msg).toBe(msg)
          // Every field that has a value is written, none over another (a name taken gets `_` before it).
          expect(Object.keys(parsed)).toHaveLength(3 + Object.values(fields).filter((v) => v !== undefined).length)
        },
      ),
    )
  })
})

describe('formatPretty', () => {
  test('HH:MM:SS.mmm (local), the level in capitals padded to one width, the message, then key=value', () => {
    expect(formatPretty(record({ fields: { amount: 5n, partner: '0xab', ok: true } }))).toBe(`${clock(TIME)} INFO  payment sent amount=5 partner=0xab ok=true`)
    expect(formatPretty(record({ level: 'error', msg: 'x' }))).toBe(`${clock(TIME)} ERROR x`)
    expect(clock(TIME)).toMatch(/^\d\d:\d\d:\d\d\.042$/)
  })

  test('values with spaces, quotes or = are JSON strings; objects compact JSON; errors as Name: message (CODE) with their causes', () => {
    const error = new NoRouteError('no route', { cause: new TypeError('fetch failed') })
    const line = formatPretty(record({ fields: { where: 'chain sync', empty: '', eq: 'a=b', channel: { id: 3n }, error, plain: new Error('boom') } }))
    expect(line).toBe(
      `${clock(TIME)} INFO  payment sent where="chain sync" empty="" eq="a=b" channel={"id":"3"} error="NoRouteError: no route (NO_ROUTE); caused by TypeError: fetch failed" plain="Error: boom"`,
    )
  })

  test('control characters are escaped: a message or a value cannot start a line or move the cursor', () => {
    const line = formatPretty(record({ msg: 'a\nb\u001b[2J', fields: { v: 'x\ny', c1: '\u009b' } }))
    expect(line).toBe(`${clock(TIME)} INFO  a\\nb\\u001b[2J v="x\\ny" c1="\\u009b"`)
  })

  test('whatever the message and fields: one line with no control character, starting with the clock and the level', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...LOG_LEVELS),
        fc.string({ unit: 'binary' }),
        fc.dictionary(fc.string({ unit: 'binary' }), values, { maxKeys: 8 }),
        (level, msg, fields) => {
          const line = formatPretty({ time: TIME, level, msg, fields })
          expect(line).not.toMatch(/\p{Cc}/u)
          expect(line.startsWith(`${clock(TIME)} ${level.toUpperCase().padEnd(5)} `)).toBe(true)
        },
      ),
    )
  })
})

describe('a message naming its fields: `{name}`', () => {
  const fields = { url: 'http://127.0.0.1:5001/api/v1', block: 42n, relays: ['/ip4/a', '/ip4/b'], chainId: 1337 }

  test('filled in both formats; the line for a person does not repeat the fields it used, the JSON line keeps them all', () => {
    const templated = record({ msg: 'REST API: {url}', fields })
    expect(formatPretty(templated)).toBe(`${clock(TIME)} INFO  REST API: http://127.0.0.1:5001/api/v1 block=42 relays=["/ip4/a","/ip4/b"] chainId=1337`)
    expect(JSON.parse(formatJson(templated))).toEqual({
      time: '2026-11-28T07:05:09.042Z',
      level: 'info',
      msg: 'REST API: http://127.0.0.1:5001/api/v1',
      url: 'http://127.0.0.1:5001/api/v1',
      block: '42',
      relays: ['/ip4/a', '/ip4/b'],
      chainId: 1337,
    })
    expect(formatPretty(record({ msg: 'synced to block {block} via {relays}', fields }))).toBe(
      `${clock(TIME)} INFO  synced to block 42 via /ip4/a, /ip4/b url=http://127.0.0.1:5001/api/v1 chainId=1337`,
    )
  })

  test('a name with no field (or an undefined one) stays as written; a value is not filled in again; a value cannot break the line', () => {
    expect(fillMessage('{missing} {gone} {url}', { gone: undefined, url: '{url}' })).toEqual({ text: '{missing} {gone} {url}', used: new Set(['url']) })
    expect(fillMessage('{toString} {__proto__}', {}).text).toBe('{toString} {__proto__}')
    expect(formatPretty(record({ msg: 'at {where}', fields: { where: 'a\nb' } }))).toBe(`${clock(TIME)} INFO  at a\\nb`)
    const circle: unknown[] = []
    circle.push(circle, { n: 1n })
    expect(fillMessage('{circle}', { circle }).text).toBe('["[Circular]",{"n":"1"}], {"n":"1"}')
  })
})
