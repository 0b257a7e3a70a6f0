import { describe, expect, test } from 'vitest'
import fixtures from '../../../fixtures/fees/raiden.json' with { type: 'json' }
import {
  amountWithFees,
  amountWithoutFees,
  calculateImbalanceFees,
  ppmFeePerChannel,
  routeAmountWithFees,
  safeAmountWithFee,
  type FeeSchedule,
  type MediationChannels,
} from '../../../../src/protocol/fees/index.ts'

// What Raiden's own functions answered for seeded random inputs (scripts/raiden-fee-fixtures.py ran them): we must
// answer the same to the unit, rounding included.

type WireSchedule = { cap_fees: boolean; flat: string; proportional: string; imbalance_penalty: string[][] | null }
type WireMediation = { payer: { balance: string; receivable: string; schedule: WireSchedule }; payee: { balance: string; schedule: WireSchedule } }

const schedule = (s: WireSchedule): FeeSchedule => ({
  cap_fees: s.cap_fees,
  flat: BigInt(s.flat),
  proportional: BigInt(s.proportional),
  imbalance_penalty: s.imbalance_penalty?.map(([x, y]) => [BigInt(x!), BigInt(y!)] as [bigint, bigint]) ?? null,
})
const channels = (m: WireMediation): MediationChannels => ({
  payer: { balance: BigInt(m.payer.balance), receivable: BigInt(m.payer.receivable), schedule: schedule(m.payer.schedule) },
  payee: { balance: BigInt(m.payee.balance), schedule: schedule(m.payee.schedule) },
})
/**
 * Raiden's None (no amount) is our undefined, and so is its 0: a mediator of Raiden's forwards nothing then (`if not
 * amount_after_fees`), and a lock of 0 is no lock.
 */
const answer = (a: string | null | { raises: string }) => (a === null || a === '0' ? undefined : typeof a === 'string' ? BigInt(a) : a)

describe("Raiden's fee functions on seeded random inputs", () => {
  test('ppm_fee_per_channel', () => {
    for (const [perHop, perChannel] of fixtures.ppmFeePerChannel) expect(ppmFeePerChannel(BigInt(perHop!))).toBe(BigInt(perChannel!))
  })

  test('get_amount_without_fees: what a mediator forwards', () => {
    const values = fixtures.mediations.filter((m) => m.amountWithoutFees !== null).length
    expect(values).toBeGreaterThan(100)
    for (const m of fixtures.mediations) expect(amountWithoutFees(BigInt(m.amount), channels(m)), JSON.stringify(m)).toBe(answer(m.amountWithoutFees))
  })

  test('get_amount_with_fees: what must come in for an amount to go out', () => {
    for (const m of fixtures.mediations) expect(amountWithFees(BigInt(m.amount), channels(m)), JSON.stringify(m)).toBe(answer(m.amountWithFees))
  })

  test('get_initial_amount_for_amount_after_fees: a route from the target back', () => {
    for (const r of fixtures.routes) {
      const expected = r.answer && { amount: BigInt(r.answer.amount), fees: r.answer.fees.map(BigInt) }
      expect(routeAmountWithFees(BigInt(r.amount), r.mediations.map(channels)) ?? null, JSON.stringify(r)).toEqual(expected)
    }
  })

  test('calculate_safe_amount_with_fee: the initiator margin', () => {
    for (const m of fixtures.margins) expect(safeAmountWithFee(BigInt(m.amount), BigInt(m.fee)), JSON.stringify(m)).toBe(BigInt(m.safe))
  })

  // In doubles, as Raiden computes it. Its `**` is glibc's pow, which is off by an ulp (its bound is 0.52) where ours
  // is correctly rounded: over 20,000 random curves 0.035 % of the points differed, by one ulp of a double, all of
  // capacities above 10^23. None of these 150 does.
  test('calculate_imbalance_fees: the penalty curve', () => {
    for (const c of fixtures.curves)
      expect(calculateImbalanceFees(BigInt(c.capacity), BigInt(c.ppm)), JSON.stringify(c)).toEqual(c.points.map(([x, y]) => [BigInt(x!), BigInt(y!)]))
  })
})
