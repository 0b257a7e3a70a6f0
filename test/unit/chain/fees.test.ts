import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  bumpDue,
  deadlineRisk,
  initialFees,
  leastPricePerGas,
  marketFees,
  maxPricePerGas,
  replacementFees,
  urgencyAt,
  type FeeMarket,
} from '../../../src/chain/fees.ts'
import type { Fees } from '../../../src/chain/transactionJournal.ts'

const gwei = 10n ** 9n
const wei = (max: bigint) => fc.bigInt({ min: 1n, max })
const eip1559 = fc.record({ baseFee: wei(10_000n * gwei), priorityFee: wei(100n * gwei) })
const legacy = fc.record({ gasPrice: wei(10_000n * gwei) })
const market: fc.Arbitrary<FeeMarket> = fc.oneof(eip1559, legacy)
const cap = fc.option(wei(20_000n * gwei), { nil: undefined })
const urgency = fc.constantFrom('normal' as const, 'urgent' as const)

/** At least 12.5 % more, as a node's replacement rule sees it (rounded up). */
const raisedEnough = (before: bigint, after: bigint) => after * 1000n >= before * 1125n && after > before

describe('the fee policy', () => {
  it('never offers more per gas than the cap, and never a tip above the fee', () => {
    fc.assert(
      fc.property(market, urgency, cap, (m, u, c) => {
        const fees = initialFees(m, u, c)
        if (c !== undefined) expect(maxPricePerGas(fees)).toBeLessThanOrEqual(c)
        if ('maxFeePerGas' in fees) expect(fees.maxPriorityFeePerGas).toBeLessThanOrEqual(fees.maxFeePerGas)
      }),
    )
  })

  it('offers what the market asks when the cap allows it: above the next base fee with the tip', () => {
    fc.assert(
      fc.property(market, urgency, (m, u) => {
        expect(maxPricePerGas(initialFees(m, u))).toBeGreaterThanOrEqual(leastPricePerGas(m))
      }),
    )
  })

  it('a chain of replacements (whatever the market does meanwhile) raises every fee by at least 12.5 % each time and never passes the cap', () => {
    fc.assert(
      fc.property(market, fc.array(fc.tuple(market, urgency), { minLength: 1, maxLength: 30 }), cap, (first, later, c) => {
        let current: Fees = initialFees(first, 'normal', c)
        for (const [m, u] of later) {
          const next = replacementFees(current, m, u, c)
          if (!next) {
            // Only the cap can refuse a replacement: 12.5 % more would pass it.
            expect(c).toBeDefined()
            const price = maxPricePerGas(current)
            expect((price * 1125n + 999n) / 1000n > c! || price + 1n > c!).toBe(true)
            continue
          }
          if (c !== undefined) expect(maxPricePerGas(next)).toBeLessThanOrEqual(c)
          if ('gasPrice' in current) {
            expect('gasPrice' in next).toBe(true)
            expect(raisedEnough(current.gasPrice, (next as { gasPrice: bigint }).gasPrice)).toBe(true)
          } else {
            expect('maxFeePerGas' in next).toBe(true)
            const n = next as { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }
            expect(raisedEnough(current.maxFeePerGas, n.maxFeePerGas)).toBe(true)
            expect(raisedEnough(current.maxPriorityFeePerGas, n.maxPriorityFeePerGas)).toBe(true)
            expect(n.maxPriorityFeePerGas).toBeLessThanOrEqual(n.maxFeePerGas)
          }
          current = next
        }
      }),
    )
  })

  it('a replacement offers at least what the market asks now, when the cap allows', () => {
    fc.assert(
      fc.property(market, market, urgency, (first, now, u) => {
        const next = replacementFees(initialFees(first, 'normal'), now, u)!
        expect(maxPricePerGas(next)).toBeGreaterThanOrEqual(maxPricePerGas(marketFees(now, u)))
      }),
    )
  })

  it('raises an offer after 3 blocks, or at every block within 10 blocks of its deadline', () => {
    expect(urgencyAt(100n, undefined)).toBe('normal')
    expect(urgencyAt(100n, 111n)).toBe('normal')
    expect(urgencyAt(101n, 111n)).toBe('urgent')
    expect(bumpDue(100n, 102n, 'normal')).toBe(false)
    expect(bumpDue(100n, 103n, 'normal')).toBe(true)
    expect(bumpDue(100n, 101n, 'urgent')).toBe(true)
    expect(bumpDue(100n, 100n, 'urgent')).toBe(false)
    expect(bumpDue(100n, 101n, 'normal', { bumpAfterBlocks: 1n })).toBe(true)
  })

  it('a deadline at risk is said as soon as the cap or the balance stands in the way, with what would help', () => {
    const spike = { baseFee: 185n * gwei, priorityFee: gwei }
    const base = { head: 100n, deadline: 400n, market: spike, gas: 100_000n, value: 0n, balance: 10n ** 18n }
    // Far from its deadline, but the cap is below what the next block asks.
    expect(deadlineRisk({ ...base, cap: 50n * gwei })).toEqual({ reason: 'fee_cap', needed: 371n * gwei })
    // The cap allows it, the balance does not: 186 gwei × 100,000 gas is 0.0186 ETH.
    expect(deadlineRisk({ ...base, balance: 10n ** 16n })).toEqual({ reason: 'balance', needed: 371n * gwei * 100_000n })
    expect(deadlineRisk(base)).toBeUndefined()
    expect(deadlineRisk({ ...base, head: 390n })).toEqual({ reason: 'not_mined' })
    expect(deadlineRisk({ ...base, head: 401n })).toEqual({ reason: 'missed' })
  })

  it('prices a chain without a base fee by its gas price, doubled when urgent', () => {
    expect(initialFees({ gasPrice: 7n * gwei }, 'normal')).toEqual({ gasPrice: 7n * gwei })
    expect(initialFees({ gasPrice: 7n * gwei }, 'urgent', 10n * gwei)).toEqual({ gasPrice: 10n * gwei })
    expect(replacementFees({ gasPrice: 8n * gwei }, { gasPrice: 7n * gwei }, 'normal')).toEqual({ gasPrice: 9n * gwei })
  })
})
