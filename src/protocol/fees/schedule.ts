import type { FeeSchedule } from '../messages/types.ts'
import { pow, roundFloat, trueDivide } from './pythonFloat.ts'
import { rational, roundHalfEven } from './rational.ts'

export type { FeeSchedule }

/** How many points the imbalance penalty has at most (Raiden's NUM_DISCRETISATION_POINTS). */
export const NUM_DISCRETISATION_POINTS = 21
/** The highest proportional imbalance fee, in parts per million (Raiden's IMBALANCE_MED_FEE_MAX: a slope of 1/20). */
export const MAX_IMBALANCE_FEE_PPM = 50_000n
/** The highest proportional fee per mediation, in parts per million (Raiden's PROPORTIONAL_MED_FEE_MAX). */
export const MAX_PROPORTIONAL_FEE_PPM = 1_000_000n

/** What a node charges for mediating one token, as its operator gives it (Raiden's flags of the same names). */
export type TokenFees = {
  /** `--flat-fee`: the flat fee of one mediation, in the token's smallest unit; each of its two channels takes half. */
  flat: bigint
  /** `--proportional-fee`: the fee of one mediation in parts per million of the amount. */
  proportional: bigint
  /** `--proportional-imbalance-fee`: the imbalance penalty at its worst, in parts per million of the channel's capacity. */
  imbalance: bigint
}

/**
 * What a mediator charges, per token: Raiden's MediationFeeConfig. A token not listed is mediated for nothing (Raiden
 * charges 0.4 % and a 0.3 % imbalance penalty by default; see docs/decisions/0069).
 */
export type MediationFees = {
  /** `--cap-mediation-fees`: a mediation's fee is never negative (on by default, as in Raiden). */
  capFees: boolean
  /** By token address in lower case. */
  tokens: Record<string, TokenFees>
}

export const noMediationFees: MediationFees = { capFees: true, tokens: {} }

/** Whether two fee settings charge the same (token order aside); an absent one charges nothing. */
export function sameMediationFees(a: MediationFees | undefined, b: MediationFees | undefined): boolean {
  const x = a ?? noMediationFees
  const y = b ?? noMediationFees
  const tokens = new Set([...Object.keys(x.tokens), ...Object.keys(y.tokens)])
  const same = (p: TokenFees | undefined, q: TokenFees | undefined) =>
    (p?.flat ?? 0n) === (q?.flat ?? 0n) && (p?.proportional ?? 0n) === (q?.proportional ?? 0n) && (p?.imbalance ?? 0n) === (q?.imbalance ?? 0n)
  return x.capFees === y.capFees && [...tokens].every((t) => same(x.tokens[t], y.tokens[t]))
}

/** Python's numpy-like linspace of Raiden: `num` integers from start to stop, both included, rounded as floats. */
export function linspace(start: bigint, stop: bigint, num: number): bigint[] {
  if (num < 2 || start > stop) throw new RangeError(`linspace(${start}, ${stop}, ${num})`)
  const step = trueDivide(stop - start, BigInt(num - 1))
  return Array.from({ length: num }, (_, i) => start + roundFloat(i * step))
}

/**
 * The U-shaped imbalance penalty of a channel of `capacity` (Raiden's calculate_imbalance_fees): 21 points at most,
 * from 0 to the capacity, worth `capacity * ppm / 1e6` at either end and 0 in the middle, steepest (1/10) at the ends.
 * Computed in doubles as Raiden computes it; null when there is none (no capacity or no fee) and when the curve's
 * doubles overflow (a capacity above about 10^31 with a small ppm, where Raiden raises OverflowError).
 */
export function calculateImbalanceFees(capacity: bigint, ppm: bigint): [bigint, bigint][] | null {
  if (capacity < 0n || ppm < 0n || ppm > MAX_IMBALANCE_FEE_PPM) throw new RangeError(`no imbalance penalty for capacity ${capacity} at ${ppm} ppm`)
  if (ppm === 0n || capacity === 0n) return null
  const maximumSlope = 0.1
  const c = Number(capacity * ppm) / 1e6
  const o = trueDivide(capacity, 2n)
  const exponent = (maximumSlope * o) / c
  const b = exponent > 10 ? 10 : exponent
  const a = c / pow(o, b)
  if (!Number.isFinite(a) || a === 0) return null
  const count = capacity + 1n < BigInt(NUM_DISCRETISATION_POINTS) ? Number(capacity + 1n) : NUM_DISCRETISATION_POINTS
  return linspace(0n, capacity, count).map((x) => [x, roundFloat(a * pow(Math.abs(Number(x) - o), b))])
}

/** A proportional fee per mediation as the fee of each of its two channels, in ppm: q / (q + 2) (Raiden's ppm_fee_per_channel). */
export function ppmFeePerChannel(perHop: bigint): bigint {
  return roundHalfEven(rational(perHop * 1_000_000n, perHop + 2_000_000n))
}

/**
 * The schedule a mediator applies to one of its channels of `token`, whose capacity (both deposits less both
 * withdrawals) is `capacity`: half the flat fee, the proportional fee per channel, and the imbalance penalty of that
 * capacity (Raiden builds it so at the start and after each deposit or withdrawal).
 */
export function channelFeeSchedule(fees: MediationFees, token: string, capacity: bigint): FeeSchedule {
  const own = fees.tokens[token.toLowerCase()]
  return {
    cap_fees: fees.capFees,
    flat: (own?.flat ?? 0n) / 2n,
    proportional: ppmFeePerChannel(own?.proportional ?? 0n),
    imbalance_penalty: own?.imbalance ? calculateImbalanceFees(capacity, own.imbalance) : null,
  }
}
