/**
 * Exact rational numbers over bigint, as Python's `fractions.Fraction` computes them: Raiden works out a mediation's
 * fee with Fractions, and only the same exact arithmetic (and the same rounding) gives the same amounts to the unit.
 * Always reduced, the denominator positive, so that equal numbers have equal fields.
 */
export type Rational = { readonly n: bigint; readonly d: bigint }

const abs = (x: bigint) => (x < 0n ? -x : x)

function gcd(a: bigint, b: bigint): bigint {
  let x = abs(a)
  let y = abs(b)
  while (y !== 0n) [x, y] = [y, x % y]
  return x
}

export function rational(n: bigint, d = 1n): Rational {
  if (d === 0n) throw new RangeError('a rational with a zero denominator')
  if (d === 1n) return { n, d }
  const g = gcd(n, d)
  const sign = d < 0n ? -1n : 1n
  return { n: (sign * n) / g, d: (sign * d) / g }
}

export const ZERO = rational(0n)

export const add = (a: Rational, b: Rational): Rational => (a.d === b.d ? rational(a.n + b.n, a.d) : rational(a.n * b.d + b.n * a.d, a.d * b.d))
export const sub = (a: Rational, b: Rational): Rational => (a.d === b.d ? rational(a.n - b.n, a.d) : rational(a.n * b.d - b.n * a.d, a.d * b.d))
export const mul = (a: Rational, b: Rational): Rational => rational(a.n * b.n, a.d * b.d)
export const div = (a: Rational, b: Rational): Rational => rational(a.n * b.d, a.d * b.n)
export const neg = (a: Rational): Rational => ({ n: -a.n, d: a.d })
export const absolute = (a: Rational): Rational => (a.n < 0n ? neg(a) : a)

/** -1, 0 or 1 as a is less than, equal to or greater than b. */
export function compare(a: Rational, b: Rational): -1 | 0 | 1 {
  const l = a.n * b.d
  const r = b.n * a.d
  return l < r ? -1 : l > r ? 1 : 0
}

export const sign = (a: Rational): -1 | 0 | 1 => (a.n < 0n ? -1 : a.n > 0n ? 1 : 0)
export const eq = (a: Rational, b: Rational) => a.n === b.n && a.d === b.d
export const lt = (a: Rational, b: Rational) => compare(a, b) < 0
export const gt = (a: Rational, b: Rational) => compare(a, b) > 0
export const max = (a: Rational, b: Rational) => (lt(a, b) ? b : a)
export const min = (a: Rational, b: Rational) => (gt(a, b) ? b : a)

/** The nearest integer, a half to the even one: Python's `round(Fraction)`. */
export function roundHalfEven(a: Rational): bigint {
  // Floor division, as Python's divmod: the remainder takes the denominator's sign (positive here).
  let floor = a.n / a.d
  if (a.n % a.d !== 0n && a.n < 0n) floor -= 1n
  const twice = 2n * (a.n - floor * a.d)
  if (twice < a.d) return floor
  if (twice > a.d) return floor + 1n
  return floor % 2n === 0n ? floor : floor + 1n
}
