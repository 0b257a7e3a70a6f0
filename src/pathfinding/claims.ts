import { MIN_IOU_EXPIRY_BLOCKS, type StoredIou } from './iou.ts'

/**
 * When the service claims a session's IOU through OneToN (docs/decisions/0072), as raiden-services' claim_fees: in the
 * session's last stretch (a claim ends the session, so the later, the more it pays for one transaction's gas), or at
 * once when the sender's deposit is at risk (a withdrawal planned, its balance drawn down); and only when what the
 * claim pays is worth more than its gas. Pure: the gas price, the token's price and the sender's balance are passed in.
 */

/** A session is claimed once its expiration is this close: a week of 15-second blocks (raiden-services claim_fees' --expires-within). */
export const CLAIM_WITHIN_BLOCKS = MIN_IOU_EXPIRY_BLOCKS
/** What a claim pays must exceed its gas by this factor, 11/10 (raiden-services GAS_COST_SAFETY_MARGIN). */
export const CLAIM_COST_MARGIN = { numerator: 11n, denominator: 10n } as const
/** A claim sent fewer blocks before the expiration than this may be mined too late: the session is given up then. */
export const CLAIM_MIN_BLOCKS_LEFT = 2n

/** The service token's price in ETH per whole token, as a fraction (Raiden's --rdn-per-eth, 0.0025 by default). */
export type TokenPrice = { numerator: bigint; denominator: bigint }
export const DEFAULT_TOKEN_PRICE: TokenPrice = { numerator: 25n, denominator: 10_000n }

export type ClaimTiming = 'due' | 'wait' | 'expired'

/** Whether a held IOU is to be claimed now, later, or cannot be any more (too close to, or past, its expiration). */
export function claimTiming(stored: StoredIou, latestBlock: bigint, claimWithinBlocks = CLAIM_WITHIN_BLOCKS): ClaimTiming {
  const left = stored.iou.expirationBlock - latestBlock
  if (left < CLAIM_MIN_BLOCKS_LEFT) return 'expired'
  return stored.atRisk || left <= claimWithinBlocks ? 'due' : 'wait'
}

/** A claim's gas cost (in wei) in the service token's smallest units, at `price`, rounded up. */
export function gasCostInTokens(gasCostWei: bigint, price: TokenPrice, decimals: number): bigint {
  if (price.numerator <= 0n) throw new RangeError('the service token price must be above 0')
  const numerator = gasCostWei * 10n ** BigInt(decimals) * price.denominator
  const denominator = price.numerator * 10n ** 18n
  return (numerator + denominator - 1n) / denominator
}

/** Whether a claim paying `transferable` is worth a gas cost of `costInTokens` (with the margin). */
export function worthClaiming(transferable: bigint, costInTokens: bigint): boolean {
  return transferable > 0n && transferable * CLAIM_COST_MARGIN.denominator > costInTokens * CLAIM_COST_MARGIN.numerator
}

/** A decimal such as `0.0025` or `400` as a fraction; undefined for anything else (a sign, an exponent, no digits). */
export function parseDecimal(text: string): TokenPrice | undefined {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text)
  if (!m) return undefined
  const fraction = m[2] ?? ''
  return { numerator: BigInt(m[1]! + fraction), denominator: 10n ** BigInt(fraction.length) }
}
