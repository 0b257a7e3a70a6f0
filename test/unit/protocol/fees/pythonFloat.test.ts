import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { ceilFloat, pow, roundFloat, trueDivide } from '../../../../src/protocol/fees/pythonFloat.ts'
import { rational, roundHalfEven } from '../../../../src/protocol/fees/rational.ts'

/** A finite double as an exact rational. */
function exactOf(x: number): { n: bigint; d: bigint } {
  let d = 1n
  let v = x
  while (!Number.isInteger(v)) {
    v *= 2
    d *= 2n
  }
  return { n: BigInt(v), d }
}

/** Whether `x` is the double nearest to n/d, a half going to the even one. */
function nearest(x: number, n: bigint, d: bigint): boolean {
  if (x === 0 || n === 0n) return x === 0 && n === 0n
  const exact = rational(n, d)
  const mine = exactOf(x)
  const distance = (y: { n: bigint; d: bigint }) => {
    const diff = rational(y.n * exact.d - exact.n * y.d, y.d * exact.d)
    return diff.n < 0n ? rational(-diff.n, diff.d) : diff
  }
  const me = distance(mine)
  for (const neighbour of [nextDown(x), nextUp(x)]) {
    const other = distance(exactOf(neighbour))
    const c = me.n * other.d - other.n * me.d
    if (c > 0n) return false
    if (c === 0n && exactOf(x).n % 2n !== 0n && exactOf(neighbour).n % 2n === 0n) return false
  }
  return true
}

const view = new DataView(new ArrayBuffer(8))
const step = (x: number, by: bigint) => {
  view.setFloat64(0, x)
  view.setBigInt64(0, view.getBigInt64(0) + (x >= 0 ? by : -by))
  return view.getFloat64(0)
}
const nextUp = (x: number) => step(x, 1n)
const nextDown = (x: number) => step(x, -1n)

describe("Python's floats", () => {
  test('int / int is the exact quotient rounded once', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }), fc.bigInt({ min: 1n, max: 2n ** 120n }), (a, b) => {
        expect(nearest(trueDivide(a, b), a, b)).toBe(true)
      }),
      { numRuns: 2000 },
    )
    // A quotient that lies on a half between two doubles goes to the even one (Number(a) / Number(b) would not).
    expect(trueDivide(2n ** 54n + 1n, 1n)).toBe(2 ** 54)
    expect(trueDivide(2n ** 54n + 3n, 1n)).toBe(2 ** 54 + 4)
    expect(trueDivide(7n, 2n)).toBe(3.5)
    expect(() => trueDivide(1n, 0n)).toThrow(RangeError)
  })

  test('round() goes to the even integer on a half; ceil up', () => {
    expect([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999999999999996, 2.6, 1e20].map(roundFloat)).toEqual([0n, 2n, 2n, 0n, -2n, 2n, 3n, 10n ** 20n])
    expect([0.1, 1, -0.5, 3.0000000000000004].map(ceilFloat)).toEqual([1n, 1n, 0n, 4n])
    fc.assert(
      fc.property(fc.double({ min: -1e15, max: 1e15, noNaN: true }), (x) => {
        const { n, d } = exactOf(x)
        expect(roundFloat(x)).toBe(roundHalfEven(rational(n, d)))
      }),
    )
  })

  test('pow is correctly rounded', () => {
    // Integer powers are exact then rounded once: 41^10 lies on a half between two doubles.
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 20 }), fc.integer({ min: 1, max: 12 }), (x, y) => {
        expect(nearest(pow(x, y), BigInt(x) ** BigInt(y), 1n)).toBe(true)
      }),
    )
    expect(pow(41, 10)).toBe(Number(41n ** 10n))
    // Roots that are exact come out exact.
    expect(pow(4, 0.5)).toBe(2)
    expect(pow(2 ** 60, 0.25)).toBe(2 ** 15)
    expect(pow(0, 3.5)).toBe(0)
    expect(pow(7.25, 0)).toBe(1)
    expect(pow(1e200, 2.5)).toBe(Number.POSITIVE_INFINITY)
    // As Python 3.11's `**` (glibc) gave them.
    expect(pow(26206.989574539446, 1.5)).toBe(4242537.638126315)
    expect(pow(5e17, 10)).toBe(9.765625e176)
    expect(pow(123456.789, 3.3333333333333335)).toBe(9.369503776046282e16)
    expect(pow(9.5e22, 1.0416666666666667)).toBe(8.612490492888891e23)
  })
})
