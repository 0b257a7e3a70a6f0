import { add, compare, div, lt, mul, rational, sub, type Rational } from './rational.ts'

/** A piecewise linear function through points with strictly ascending x: Raiden's `Interpolate`. */
export type Interpolation = { readonly xs: readonly Rational[]; readonly ys: readonly Rational[]; readonly slopes: readonly Rational[] }

/** The function through (xs[i], ys[i]); undefined when the xs do not strictly ascend (Raiden raises ValueError). */
export function interpolation(xs: readonly Rational[], ys: readonly Rational[]): Interpolation | undefined {
  if (xs.length === 0 || xs.length !== ys.length) return undefined
  const slopes: Rational[] = []
  for (let i = 0; i + 1 < xs.length; i++) {
    if (!lt(xs[i]!, xs[i + 1]!)) return undefined
    slopes.push(div(sub(ys[i + 1]!, ys[i]!), sub(xs[i + 1]!, xs[i]!)))
  }
  return { xs, ys, slopes }
}

/** The function through integer points, as an announced imbalance penalty gives them. */
export const interpolationOfPoints = (points: readonly (readonly [bigint, bigint])[]): Interpolation | undefined =>
  interpolation(
    points.map(([x]) => rational(x)),
    points.map(([, y]) => rational(y)),
  )

/** The index of the last x at or before `x` (Python's bisect_right less one). */
function segment(xs: readonly Rational[], x: Rational): number {
  let lo = 0
  let hi = xs.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (compare(x, xs[mid]!) < 0) hi = mid
    else lo = mid + 1
  }
  return lo - 1
}

/** f(x), or undefined outside [first x, last x] (Raiden raises ValueError, which becomes UndefinedMediationFee). */
export function valueAt(f: Interpolation, x: Rational): Rational | undefined {
  const last = f.xs.length - 1
  if (lt(x, f.xs[0]!) || lt(f.xs[last]!, x)) return undefined
  if (compare(x, f.xs[last]!) === 0) return f.ys[last]!
  const i = segment(f.xs, x)
  return add(f.ys[i]!, mul(f.slopes[i]!, sub(x, f.xs[i]!)))
}
