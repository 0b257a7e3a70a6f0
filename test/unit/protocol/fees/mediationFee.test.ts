import { describe, expect, test } from 'vitest'
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
import { mediationFeeFunction } from '../../../../src/protocol/fees/mediationFee.ts'
import { interpolation, valueAt } from '../../../../src/protocol/fees/interpolate.ts'
import { rational } from '../../../../src/protocol/fees/rational.ts'

// The cases of Raiden's own tests, with the numbers they expect: raiden/tests/unit/transfer/mediated_transfer/
// test_mediation_fee.py and test_mediatorstate.py (raiden-network/raiden at 90cd5a6cc). Raiden's channel factory gives
// each end a balance of 100 unless a test says otherwise; a mediator's balance in the payer's channel is its own end's
// balance, and what the payer can still send it (receivable) is both deposits less that.

const schedule = (s: Partial<FeeSchedule> = {}): FeeSchedule => ({ cap_fees: true, flat: 0n, proportional: 0n, imbalance_penalty: null, ...s })

/** A mediation between two channels, each given as (our end's balance, the partner's), as Raiden's factory makes them. */
function mediation(payer: { our: bigint; partner: bigint; schedule: FeeSchedule }, payee: { our: bigint; schedule: FeeSchedule }): MediationChannels {
  return {
    payer: { balance: payer.our, receivable: payer.partner, schedule: payer.schedule },
    payee: { balance: payee.our, schedule: payee.schedule },
  }
}

const q = (n: bigint | number, d: bigint | number = 1n) => rational(BigInt(n), BigInt(d))

describe('the interpolation (test_interpolation)', () => {
  test('through its points, straight between them, nothing outside', () => {
    const line = interpolation([q(0), q(100)], [q(0), q(100)])!
    for (let i = 0; i <= 100; i++) expect(valueAt(line, q(i))).toEqual(q(i))
    const v = interpolation([q(0), q(50), q(100)], [q(0), q(-50), q(50)])!
    expect([40, 60, 90, 99].map((x) => valueAt(v, q(x)))).toEqual([q(-40), q(-30), q(30), q(48)])
    const fractions = interpolation([q(0), q(100)], [q(1235, 100), q(672, 10)])!
    expect(valueAt(fractions, q(0))).toEqual(q(1235, 100))
    expect(valueAt(fractions, q(50))).toEqual(q(39_775, 1000))
    expect(valueAt(fractions, q(100))).toEqual(q(672, 10))
    expect(valueAt(line, q(101))).toBeUndefined()
    expect(valueAt(line, q(-1, 2))).toBeUndefined()
    expect(interpolation([q(0), q(0)], [q(0), q(1)])).toBeUndefined()
  })
})

describe('the fee of one mediation', () => {
  test.each([
    // [flat per mediation, proportional per mediation, amount in, amount out]: test_get_lock_amount_after_fees
    [50n, 0n, 1000n, 900n],
    [0n, 1_000_000n, 2000n, 1000n],
    [0n, 100_000n, 1100n, 1000n],
    [0n, 50_000n, 1050n, 1000n],
    [0n, 10_000n, 1010n, 1000n],
    [0n, 10_000n, 101n, 100n],
    [0n, 4_990n, 100n, 100n],
    [1n, 500_000n, 1502n, 1000n],
    [10n, 500_000n, 1520n, 997n],
    [100n, 500_000n, 1700n, 967n],
    [1n, 100_000n, 1102n, 1000n],
    [10n, 100_000n, 1120n, 999n],
    [100n, 100_000n, 1300n, 991n],
    [1n, 10_000n, 1012n, 1000n],
    [10n, 10_000n, 1030n, 1000n],
    [100n, 10_000n, 1210n, 999n],
    [100n, 500_000n, 1750n, 1000n],
    [0n, 200_000n, 56n, 47n],
    [0n, 200_000n, 47n, 39n],
  ])('flat %i, proportional %i ppm: %i in, %i out', (flat, proportional, amountIn, amountOut) => {
    // Raiden's flags give a mediation's fee; each of its two channels takes half the flat fee and ppmFeePerChannel.
    const perChannel = schedule({ flat, proportional: ppmFeePerChannel(proportional) })
    const channels = mediation({ our: 100n, partner: 2000n, schedule: perChannel }, { our: 2000n, schedule: perChannel })
    expect(amountWithoutFees(amountIn, channels)).toBe(amountOut)
  })

  test.each([
    // [cap fees, imbalance ppm, amount out]: test_get_lock_amount_after_fees_imbalanced_channel, 50,000 in
    [false, 10_000n, 52_000n],
    [false, 20_000n, 53_995n],
    [false, 30_000n, 55_910n],
    [false, 40_000n, 57_613n],
    [false, 50_000n, 59_091n],
    [true, 10_000n, 50_000n],
    [true, 20_000n, 50_000n],
    [true, 30_000n, 50_000n],
    [true, 40_000n, 50_000n],
    [true, 50_000n, 50_000n],
  ])('a channel drained on one side, balanced by the payment (cap %s, %i ppm): %i out', (capFees, ppm, amountOut) => {
    const perChannel = schedule({ cap_fees: capFees, imbalance_penalty: calculateImbalanceFees(100_000n, ppm) })
    const channels = mediation({ our: 0n, partner: 100_000n, schedule: perChannel }, { our: 100_000n, schedule: perChannel })
    expect(amountWithoutFees(50_000n, channels)).toBe(amountOut)
  })

  test('test_imbalance_penalty: fees into and out of a V-shaped penalty, capped or not', () => {
    const v = [
      [0n, 10n],
      [50n, 0n],
      [100n, 20n],
    ] as [bigint, bigint][]
    const reversed = [
      [0n, 20n],
      [50n, 0n],
      [100n, 10n],
    ] as [bigint, bigint][]
    const cases: [boolean, bigint, bigint, bigint | undefined, bigint | undefined][] = [
      [false, 0n, 50n, -8n, -10n],
      [false, 50n, 30n, 20n, 12n],
      [false, 0n, 10n, -2n, -2n],
      [false, 10n, 10n, -2n, -2n],
      [false, 0n, 20n, -3n, -4n],
      [false, 40n, 15n, 0n, 0n],
      [false, 50n, 31n, undefined, 12n],
      [false, 100n, 1n, undefined, undefined],
      [true, 0n, 50n, 0n, 0n],
      [true, 50n, 30n, 20n, 12n],
      [true, 0n, 10n, 0n, 0n],
      [true, 10n, 10n, 0n, 0n],
      [true, 0n, 20n, 0n, 0n],
      [true, 40n, 15n, 0n, 0n],
    ]
    for (const [capFees, x1, amount, feeIn, feeOut] of cases) {
      const inward = amountWithFees(amount, {
        payer: { balance: x1, receivable: 100n - x1, schedule: schedule({ cap_fees: capFees, imbalance_penalty: v }) },
        payee: { balance: 100n, schedule: schedule({ cap_fees: capFees }) },
      })
      expect(inward === undefined ? undefined : inward - amount, `in ${[capFees, x1, amount]}`).toBe(feeIn)
      const outward = amountWithFees(amount, {
        payer: { balance: 0n, receivable: 100n, schedule: schedule({ cap_fees: capFees }) },
        payee: { balance: 100n - x1, schedule: schedule({ cap_fees: capFees, imbalance_penalty: reversed }) },
      })
      expect(outward === undefined ? undefined : outward - amount, `out ${[capFees, x1, amount]}`).toBe(feeOut)
    }
  })

  test('test_fee_capping: a fee that crosses zero is capped from where it crosses', () => {
    const channels: MediationChannels = {
      payer: { balance: 0n, receivable: 100n, schedule: schedule() },
      payee: {
        balance: 100n,
        schedule: schedule({
          flat: 5n,
          imbalance_penalty: [
            [0n, 0n],
            [100n, 20n],
          ],
        }),
      },
    }
    const fee = mediationFeeFunction(channels, { amountIn: 5n })!
    expect(valueAt(fee, q(30))).toEqual(q(0))
    expect(valueAt(fee, q(20))).toEqual(q(1))
  })

  // test_mediatorstate.py: forward_transfer_pair with fees.
  test('test_next_transfer_pair_with_fees_deducted: 1 and 2 flat on the two channels', () => {
    const channels = mediation({ our: 10n, partner: 100n, schedule: schedule({ flat: 1n }) }, { our: 7n, schedule: schedule({ flat: 2n }) })
    expect(amountWithoutFees(10n, channels)).toBe(7n)
  })

  test('test_imbalance_penalty_at_insufficent_payer_balance / _mediator_balance / _with_barely_sufficient_balance', () => {
    const penalty = calculateImbalanceFees(20n, 1n)
    const s = (flat = 0n) => schedule({ flat, imbalance_penalty: penalty })
    // 11 + 10 leaves the payer channel's penalty range (0..20): no mediation, and no exception either.
    expect(amountWithoutFees(10n, mediation({ our: 11n, partner: 100n, schedule: s() }, { our: 11n, schedule: s() }))).toBeUndefined()
    expect(amountWithoutFees(10n, mediation({ our: 11n, partner: 100n, schedule: s() }, { our: 9n, schedule: s() }))).toBeUndefined()
    expect(amountWithoutFees(10n, mediation({ our: 9n, partner: 100n, schedule: s() }, { our: 9n, schedule: s(1n) }))).toBeDefined()
  })

  test('test_imbalance_penalty_prevents_transfer: a negative fee beyond the payee capacity is no mediation', () => {
    const channels = mediation(
      { our: 10n, partner: 100n, schedule: schedule({ cap_fees: false }) },
      {
        our: 10n,
        schedule: schedule({
          cap_fees: false,
          imbalance_penalty: [
            [0n, 0n],
            [1000n, 100n],
          ],
        }),
      },
    )
    expect(amountWithoutFees(10n, channels)).toBeUndefined()
  })

  test("an amount on a half rounds to the even one, as Python's round(Fraction)", () => {
    // 100 % on the payee's channel alone: x + x = amount in, so x = amount / 2.
    const channels = mediation({ our: 0n, partner: 100n, schedule: schedule() }, { our: 100n, schedule: schedule({ proportional: 1_000_000n }) })
    expect([5n, 7n, 9n, 11n].map((amount) => amountWithoutFees(amount, channels))).toEqual([2n, 4n, 4n, 6n])
  })

  test('no mediation without a token to move on either side', () => {
    const s = schedule({ flat: 1n })
    expect(amountWithoutFees(10n, mediation({ our: 10n, partner: 100n, schedule: s }, { our: 0n, schedule: s }))).toBeUndefined()
    expect(amountWithoutFees(10n, mediation({ our: 10n, partner: 0n, schedule: s }, { our: 10n, schedule: s }))).toBeUndefined()
    // The fees take it all.
    expect(amountWithoutFees(2n, mediation({ our: 10n, partner: 100n, schedule: s }, { our: 10n, schedule: s }))).toBeUndefined()
  })
})

describe("a route's fees and the initiator's margin (test_mfee1..4)", () => {
  /** Raiden's make_channel_pair: the same schedule on both channels, the mediator holding balance2 in the first. */
  const pair = (s: FeeSchedule, balance1: bigint, balance2 = 0n): MediationChannels =>
    mediation({ our: balance2, partner: balance1, schedule: s }, { our: balance1, schedule: s })

  const withMargin = (amount: bigint, mediations: MediationChannels[]) => {
    const route = routeAmountWithFees(amount, mediations)!
    const fee = route.fees.reduce((a, b) => a + b, 0n)
    return safeAmountWithFee(route.amount - fee, fee)
  }

  test('mfee1: a flat fee of 100 per mediation, two mediators', () => {
    expect(withMargin(10_000n, Array(2).fill(pair(schedule({ flat: 50n }), 100_000n)))).toBe(10_211n)
  })

  test('mfee2: 1 % per mediation, two mediators', () => {
    expect(withMargin(10_000n, Array(2).fill(pair(schedule({ proportional: ppmFeePerChannel(10_000n) }), 100_000n)))).toBe(10_213n)
  })

  test('mfee3: an imbalance fee alone, uncapped, one mediator', () => {
    const deposit = 10n ** 18n
    const s = schedule({ cap_fees: false, imbalance_penalty: calculateImbalanceFees(deposit, 10_000n) })
    expect(withMargin(5n * 10n ** 17n, [pair(s, deposit)])).toBe(480_850_038_799_922_400n)
  })

  test('mfee4: all fees together, and what each mediator then forwards', () => {
    const deposit = 10n ** 18n
    const amount = 5n * 10n ** 17n
    const s = schedule({
      cap_fees: false,
      flat: 50n,
      proportional: ppmFeePerChannel(10_000n),
      imbalance_penalty: calculateImbalanceFees(2n * deposit, 20_000n),
    })
    const channels = pair(s, deposit, deposit)
    const route = routeAmountWithFees(amount, [channels, channels])!
    const locked = safeAmountWithFee(
      amount,
      route.fees.reduce((a, b) => a + b, 0n),
    )
    expect(locked).toBe(543_503_066_141_505_551n)
    const first = amountWithoutFees(locked, channels)!
    const second = amountWithoutFees(first, channels)!
    // Each mediator takes its fee, and what the margin leaves over reaches the target.
    expect(first).toBeLessThan(locked)
    expect(second).toBeGreaterThanOrEqual(amount)
  })
})
