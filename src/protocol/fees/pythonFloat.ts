/**
 * Python's float arithmetic where Raiden computes with floats rather than Fractions: the imbalance penalty's points
 * (calculate_imbalance_fees, linspace) and the initiator's fee margin. A JavaScript number is the same IEEE double and
 * +, -, *, / round the same way; what differs is made the same here: `int / int` (Python divides the exact integers,
 * rounding once), `round()` (to the even integer on a half) and `**` (C's pow, correctly rounded in glibc where V8's
 * Math.pow is off by an ulp for about one input in ten).
 */

const bitLength = (x: bigint): number => (x === 0n ? 0 : x.toString(2).length)
const TWO_53 = 2n ** 53n

/** Python's `a / b` for two ints: the exact quotient rounded once to a double (half to even). */
export function trueDivide(a: bigint, b: bigint): number {
  if (b === 0n) throw new RangeError('division by zero')
  const negative = a < 0n !== b < 0n
  const x = a < 0n ? -a : a
  const y = b < 0n ? -b : b
  if (x === 0n) return negative ? -0 : 0
  // Both exact as doubles: one IEEE division rounds once.
  if (x <= TWO_53 && y <= TWO_53) return (negative ? -1 : 1) * (Number(x) / Number(y))
  // A quotient of at least 55 bits with a sticky bit below them rounds as the exact one does.
  const k = 55 - (bitLength(x) - bitLength(y))
  const num = k >= 0 ? x << BigInt(k) : x
  const den = k >= 0 ? y : y << BigInt(-k)
  let q = num / den
  if (num % den !== 0n) q |= 1n
  return (negative ? -1 : 1) * Number(q) * 2 ** -k
}

/** Python's `round(x)` of a float: the nearest integer, a half to the even one. */
export function roundFloat(x: number): bigint {
  if (!Number.isFinite(x)) throw new RangeError(`cannot round ${x} to an integer`)
  const floor = Math.floor(x)
  const rest = x - floor
  return BigInt(rest > 0.5 || (rest === 0.5 && floor % 2 !== 0) ? floor + 1 : floor)
}

/** Python's `math.ceil(x)` of a float, as an integer. */
export function ceilFloat(x: number): bigint {
  if (!Number.isFinite(x)) throw new RangeError(`cannot round ${x} to an integer`)
  return BigInt(Math.ceil(x))
}

/** A finite double as m * 2^e, m an integer below 2^53. */
function decompose(x: number): { m: bigint; e: number } {
  const view = new DataView(new ArrayBuffer(8))
  view.setFloat64(0, x)
  const bits = view.getBigUint64(0)
  const exponent = Number((bits >> 52n) & 0x7ffn)
  const fraction = bits & ((1n << 52n) - 1n)
  const m = exponent === 0 ? fraction : fraction | (1n << 52n)
  return { m: x < 0 ? -m : m, e: (exponent === 0 ? 1 : exponent) - 1075 }
}

/** m * 2^e as the nearest double (m >= 0), for results in the normal range. */
function toDouble(m: bigint, e: number): number {
  if (m === 0n) return 0
  // Number() rounds an integer once, half to even; the power of two then scales exactly.
  const extra = bitLength(m) - 64
  if (extra > 0) {
    // Keep 64 bits and a sticky bit for what is shifted out: the same rounding as the whole.
    const rest = m & ((1n << BigInt(extra)) - 1n)
    m = (m >> BigInt(extra)) | (rest !== 0n ? 1n : 0n)
    e += extra
  }
  // Two steps so that neither factor overflows on the way to a representable result.
  const half = Math.trunc(e / 2)
  return Number(m) * 2 ** half * 2 ** (e - half)
}

// Fixed point with P fraction bits: enough that the result's 53 bits are right but for inputs within 2^-130 of a
// rounding boundary.
const P = 192n
const ONE = 1n << P

/** atanh(t) for a fixed-point |t| <= 1/3: t + t^3/3 + t^5/5 + ... */
function atanh(t: bigint): bigint {
  const t2 = (t * t) >> P
  let term = t
  let sum = t
  for (let k = 3n; ; k += 2n) {
    // Division truncates towards zero: a negative term reaches 0 too (a shift would stop at -1).
    term = (term * t2) / ONE
    if (term === 0n) return sum
    sum += term / k
  }
}

const LN2 = 2n * atanh(ONE / 3n)

/** ln(m * 2^e) in fixed point, m > 0. */
function ln(m: bigint, e: number): bigint {
  const length = bitLength(m)
  // m * 2^e = f * 2^k with f in [1/sqrt(2), sqrt(2)), so that atanh's argument stays small.
  let f = (m << P) >> BigInt(length - 1)
  let k = BigInt(e + length - 1)
  if (f * f > 2n * ONE * ONE) {
    f >>= 1n
    k += 1n
  }
  return k * LN2 + 2n * atanh(((f - ONE) << P) / (f + ONE))
}

const floorDiv = (a: bigint, b: bigint) => (a >= 0n ? a / b : -((-a + b - 1n) / b))

/** e^z for a fixed-point z, as a double. */
function exp(z: bigint): number {
  const k = floorDiv(z + (LN2 >> 1n), LN2)
  const r = z - k * LN2
  let term = ONE
  let sum = ONE
  for (let n = 1n; ; n++) {
    term = (term * r) / ONE / n
    if (term === 0n) break
    sum += term
  }
  if (k > 1100n) return Number.POSITIVE_INFINITY
  if (k < -1100n) return 0
  return toDouble(sum, Number(k) - Number(P))
}

/**
 * C's `pow(x, y)` as glibc computes it, correctly rounded, for x >= 0 and a finite y: Python's `x ** y` of floats.
 * An integer power (up to 64) is computed exactly and rounded once, so that a result that lies on a half is rounded
 * to even as glibc does. Overflow gives Infinity (Python raises OverflowError: the callers check).
 */
export function pow(x: number, y: number): number {
  if (!(x >= 0) || !Number.isFinite(x) || !Number.isFinite(y)) throw new RangeError(`pow(${x}, ${y}) is outside what Raiden's fees need`)
  if (y === 0 || x === 1) return 1
  if (x === 0) return y > 0 ? 0 : Number.POSITIVE_INFINITY
  const { m, e } = decompose(x)
  if (Number.isInteger(y) && y > 0 && y <= 64) return toDouble(m ** BigInt(y), e * y)
  const { m: my, e: ey } = decompose(y)
  const product = ln(m, e) * my
  return exp(ey >= 0 ? product << BigInt(ey) : floorDiv(product, 1n << BigInt(-ey)))
}
