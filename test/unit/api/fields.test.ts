import fc from 'fast-check'
import { maxUint256 } from 'viem'
import { describe, expect, it } from 'vitest'
import { address, bytes32, fraction, integer, oneOf, optional, parseShape, text } from '../../../src/api/fields.ts'
import { JsonNumber } from '../../../src/api/json.ts'
import { jsonSchemaOf } from '../../../src/api/jsonSchema.ts'

const A = '0x5B38Da6a701c568545dCfcB03FcB875f56beddC4'

/** The answer to `object` read against `shape`: the fields, or the status and message of the error. */
const read = (shape: Parameters<typeof parseShape>[1], object: Record<string, unknown>) => {
  try {
    return parseShape(object, shape)
  } catch (error) {
    const { status, shortMessage } = error as { status: number; shortMessage: string }
    return { status, message: shortMessage }
  }
}

describe('request fields', () => {
  it('answer each wrong value with the status and the message docs/rest-api.md gives', () => {
    const cases: [Parameters<typeof parseShape>[1], Record<string, unknown>, { status: number; message: string }][] = [
      [{ n: integer() }, { n: '1.5' }, { status: 400, message: 'n: not a valid integer (a JSON integer or a decimal string)' }],
      [{ n: integer() }, { n: new JsonNumber('1e3') }, { status: 400, message: 'n: not a valid integer (a JSON integer or a decimal string)' }],
      [{ n: integer() }, { n: true }, { status: 400, message: 'n: not a valid integer (a JSON integer or a decimal string)' }],
      [{ n: integer() }, { n: '-1' }, { status: 409, message: 'n: must be at least 0' }],
      [{ n: integer() }, { n: (maxUint256 + 1n).toString() }, { status: 409, message: `n: must be at most ${maxUint256}` }],
      [{ n: integer({ min: 1n, max: 300n, rangeStatus: 400 }) }, { n: '0' }, { status: 400, message: 'n: must be at least 1' }],
      [{ n: integer({ min: 1n, max: 300n, rangeStatus: 400 }) }, { n: new JsonNumber('301') }, { status: 400, message: 'n: must be at most 300' }],
      [{ f: fraction() }, { f: '1e0' }, { status: 400, message: 'f: not a valid number' }],
      [{ f: fraction() }, { f: new JsonNumber('1E400') }, { status: 400, message: 'f: not a valid number' }],
      [{ f: fraction() }, { f: new JsonNumber('1.5') }, { status: 409, message: 'f: must lie between 0 and 1' }],
      [{ a: address() }, { a: 42 }, { status: 400, message: 'a: not a string' }],
      [{ a: address() }, { a: A.slice(2) }, { status: 400, message: 'a: not a valid hex encoded address, must be 0x prefixed' }],
      [{ a: address() }, { a: A.toLowerCase() }, { status: 400, message: 'a: not a valid EIP55 encoded address' }],
      [{ a: address() }, { a: `0X${A.slice(2)}` }, { status: 400, message: 'a: not a valid EIP55 encoded address' }],
      [{ a: address() }, { a: `0x${'0'.repeat(40)}` }, { status: 400, message: `a: the 0x${'0'.repeat(40)} address is not accepted` }],
      [{ s: bytes32() }, { s: 'ab'.repeat(32) }, { status: 400, message: 's: not a valid hex encoded value, must be 0x prefixed' }],
      [{ s: bytes32() }, { s: `0x${'zz'.repeat(32)}` }, { status: 400, message: 's: not valid hex, contains invalid characters' }],
      [{ s: bytes32() }, { s: '0x123' }, { status: 400, message: 's: not 32 bytes long' }],
      [{ t: text({ maxLength: 3 }) }, { t: 'abcd' }, { status: 400, message: 't: longer than 3 characters' }],
      [{ o: oneOf(['closed']) }, { o: 'opened' }, { status: 400, message: 'o: must be one of: closed' }],
      [{ o: oneOf(['closed']) }, { o: 1 }, { status: 400, message: 'o: not a string' }],
    ]
    for (const [shape, object, answer] of cases) expect(read(shape, object), JSON.stringify(object)).toEqual(answer)
  })

  it('read a JSON integer or a decimal string to a bigint, a secret to lowercase, a fraction to a number', () => {
    const shape = { n: integer(), s: bytes32(), f: fraction(), a: address(), o: oneOf(['closed']) }
    const secret = `0X${'AB'.repeat(32)}`
    expect(read(shape, { n: new JsonNumber(maxUint256.toString()), s: secret, f: '0.5', a: A, o: 'closed' })).toEqual({
      n: maxUint256,
      s: secret.toLowerCase(),
      f: 0.5,
      a: A,
      o: 'closed',
    })
    expect(read({ n: integer() }, { n: '42' })).toEqual({ n: 42n })
  })

  it('read null and absent as undefined for an optional field, and refuse both for a required one', () => {
    const shape = { amount: integer(), identifier: optional(integer()) }
    expect(read(shape, { amount: '1', identifier: null })).toEqual({ amount: 1n, identifier: undefined })
    expect(read(shape, { amount: '1' })).toEqual({ amount: 1n, identifier: undefined })
    expect(read(shape, { amount: null })).toEqual({ status: 400, message: 'amount: may not be null' })
    expect(read(shape, {})).toEqual({ status: 400, message: 'amount: missing data for required field' })
    expect(read({ o: oneOf(['closed']) }, { o: null })).toEqual({ status: 400, message: 'o: may not be null' })
  })

  it('report an unknown key before any field, then the fields in the order of the shape', () => {
    const shape = { a: integer(), b: integer() }
    expect(read(shape, { b: 'x', extra: 1, a: 'y' })).toEqual({ status: 400, message: 'extra: unknown field' })
    expect(read(shape, { b: 'x', a: '-1' })).toEqual({ status: 409, message: 'a: must be at least 0' })
    expect(read(shape, { b: '-1', a: 'x' })).toEqual({ status: 400, message: 'a: not a valid integer (a JSON integer or a decimal string)' })
    expect(read(shape, { a: '1', b: '2', ['__proto__']: 1 })).toMatchObject({ status: 400 })
  })

  it('an integer field reads exactly the integers in its range, whatever their size or form', () => {
    const min = 1n
    const max = 2n ** 64n - 1n
    const shape = { n: integer({ min, max }) }
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }), fc.boolean(), (n, asNumber) => {
        const value = asNumber ? new JsonNumber(n.toString()) : n.toString()
        const expected =
          n < min ? { status: 409, message: `n: must be at least ${min}` } : n > max ? { status: 409, message: `n: must be at most ${max}` } : { n }
        expect(read(shape, { n: value })).toEqual(expected)
      }),
    )
    fc.assert(
      fc.property(
        fc.string().filter((s) => !/^-?(0|[1-9]\d*)$/.test(s)),
        (s) => {
          expect(read(shape, { n: s })).toMatchObject({ status: 400 })
        },
      ),
    )
  })
})

describe('the JSON Schema of a field (openapi.json)', () => {
  it('is what a client sends: integers as a decimal string or a JSON integer, optional ones as their value', () => {
    expect(jsonSchemaOf(integer({ min: 1n, description: 'amount' }))).toEqual({
      oneOf: [
        { type: 'string', pattern: '^(0|[1-9][0-9]*)$' },
        { type: 'integer', minimum: 1 },
      ],
      description: 'amount',
    })
    expect(jsonSchemaOf(integer({ min: -maxUint256, documentedMin: 0n }))).toMatchObject({ oneOf: [{}, { type: 'integer', minimum: 0 }] })
    expect(jsonSchemaOf(optional(integer()))).toEqual(jsonSchemaOf(integer()))
    expect(jsonSchemaOf(fraction())).toEqual({ type: 'number', minimum: 0, maximum: 1 })
    expect(jsonSchemaOf(address())).toEqual({ type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55 checksummed address' })
    expect(jsonSchemaOf(bytes32())).toEqual({ type: 'string', pattern: '^0[xX][0-9a-fA-F]{64}$' })
    expect(jsonSchemaOf(text({ maxLength: 64 }))).toEqual({ type: 'string', maxLength: 64 })
    expect(jsonSchemaOf(oneOf(['opened', 'closed']))).toEqual({ type: 'string', enum: ['opened', 'closed'] })
  })
})
