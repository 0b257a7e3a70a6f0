import { describe, expect, test } from 'vitest'
import { CLAIM_MIN_BLOCKS_LEFT, CLAIM_WITHIN_BLOCKS, claimTiming, gasCostInTokens, parseDecimal, worthClaiming } from '../../../src/pathfinding/claims.ts'
import type { StoredIou } from '../../../src/pathfinding/iou.ts'

const stored = (expirationBlock: bigint, atRisk = false) =>
  ({ iou: { expirationBlock }, status: 'held', updatedAt: 0, ...(atRisk ? { atRisk } : {}) }) as StoredIou

describe('when a session is claimed', () => {
  test('in its last stretch, or at once when its deposit is at risk; given up once too close to its end', () => {
    const end = 100_000n
    expect(claimTiming(stored(end), end - CLAIM_WITHIN_BLOCKS - 1n)).toBe('wait')
    expect(claimTiming(stored(end), end - CLAIM_WITHIN_BLOCKS)).toBe('due')
    expect(claimTiming(stored(end, true), 0n)).toBe('due')
    expect(claimTiming(stored(end), end - CLAIM_MIN_BLOCKS_LEFT)).toBe('due')
    expect(claimTiming(stored(end), end - CLAIM_MIN_BLOCKS_LEFT + 1n)).toBe('expired')
  })

  test("only when it pays more than its gas, 11/10 of it, at the token's price", () => {
    // 100,000 gas at 1 gwei is 1e14 wei; at 0.0025 ETH a token (18 decimals), 0.04 tokens.
    const cost = gasCostInTokens(100_000n * 10n ** 9n, parseDecimal('0.0025')!, 18)
    expect(cost).toBe(4n * 10n ** 16n)
    expect(gasCostInTokens(1n, parseDecimal('1')!, 0)).toBe(1n)
    expect(gasCostInTokens(10n ** 18n, parseDecimal('2')!, 6)).toBe(500_000n)
    expect(worthClaiming((cost * 11n) / 10n, cost)).toBe(false)
    expect(worthClaiming((cost * 11n) / 10n + 1n, cost)).toBe(true)
    expect(worthClaiming(0n, 0n)).toBe(false)
  })

  test('a price is a plain decimal', () => {
    expect(parseDecimal('0.0025')).toEqual({ numerator: 25n, denominator: 10_000n })
    expect(parseDecimal('400')).toEqual({ numerator: 400n, denominator: 1n })
    for (const bad of ['-1', '1e3', '.5', '1.', '', 'x']) expect(parseDecimal(bad), bad).toBeUndefined()
  })
})
