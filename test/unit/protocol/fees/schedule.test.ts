import { describe, expect, test } from 'vitest'
import { NUM_DISCRETISATION_POINTS, calculateImbalanceFees, channelFeeSchedule, linspace, ppmFeePerChannel } from '../../../../src/protocol/fees/index.ts'

// raiden/tests/unit/transfer/mediated_transfer/test_mediation_fee.py: test_linspace, test_rebalancing_fee_calculation.

describe('linspace', () => {
  test('integers from start to stop, both included, rounded half to even', () => {
    expect(linspace(0n, 4n, 5)).toEqual([0n, 1n, 2n, 3n, 4n])
    expect(linspace(0n, 4n, 4)).toEqual([0n, 1n, 3n, 4n])
    expect(linspace(0n, 4n, 3)).toEqual([0n, 2n, 4n])
    expect(linspace(0n, 4n, 2)).toEqual([0n, 4n])
    expect(linspace(0n, 0n, 3)).toEqual([0n, 0n, 0n])
    expect(() => linspace(0n, 4n, 1)).toThrow(RangeError)
    expect(() => linspace(4n, 0n, 2)).toThrow(RangeError)
  })
})

describe('the imbalance penalty', () => {
  const check = (capacity: bigint, ppm: bigint, points: number, top: bigint) => {
    const curve = calculateImbalanceFees(capacity, ppm)!
    expect(curve).toHaveLength(points)
    expect(curve.every(([x, y]) => x >= 0n && x <= capacity && y >= 0n && y <= top)).toBe(true)
    expect(curve.at(-1)![0]).toBe(capacity)
    expect(curve.reduce((m, [, y]) => (y > m ? y : m), 0n)).toBe(top)
  }

  test('worth ppm of the capacity at its ends', () => {
    check(200n, 50_000n, NUM_DISCRETISATION_POINTS, 10n)
    check(100n, 20_000n, NUM_DISCRETISATION_POINTS, 2n)
    // One point per token below 21 tokens; 5 % of 15 is 0.75, rounded to 1.
    check(15n, 50_000n, 16, 1n)
    // 5.49 rounds to 5, 5.5 to 6.
    check(1000n, 5_490n, NUM_DISCRETISATION_POINTS, 5n)
    check(1000n, 5_500n, NUM_DISCRETISATION_POINTS, 6n)
  })

  test('none without capacity or without a fee; a fee above 5 % is refused', () => {
    expect(calculateImbalanceFees(0n, 1n)).toBeNull()
    expect(calculateImbalanceFees(10n, 0n)).toBeNull()
    expect(() => calculateImbalanceFees(10n, 50_001n)).toThrow(RangeError)
  })

  test('none where the curve overflows doubles (Raiden raises OverflowError)', () => {
    expect(calculateImbalanceFees(10n ** 40n, 1n)).toBeNull()
    expect(calculateImbalanceFees(10n ** 30n, 1n)).not.toBeNull()
  })
})

describe("a mediator's schedule for one of its channels", () => {
  const token = '0x00000000000000000000000000000000000000aa'
  test("half the flat fee and the per-channel share of the proportional fee, from the operator's per-token settings", () => {
    const fees = { capFees: false, tokens: { [token]: { flat: 101n, proportional: 10_000n, imbalance: 3_000n } } }
    expect(channelFeeSchedule(fees, token.toUpperCase().replace('0X', '0x'), 1000n)).toEqual({
      cap_fees: false,
      flat: 50n,
      proportional: ppmFeePerChannel(10_000n),
      imbalance_penalty: calculateImbalanceFees(1000n, 3_000n),
    })
    expect(ppmFeePerChannel(10_000n)).toBe(4975n)
  })

  test('nothing for a token not listed', () => {
    expect(channelFeeSchedule({ capFees: true, tokens: {} }, token, 1000n)).toEqual({ cap_fees: true, flat: 0n, proportional: 0n, imbalance_penalty: null })
  })
})
