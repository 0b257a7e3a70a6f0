import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { RateLimit } from '../../../../src/transport/libp2p/rateLimit.ts'

describe('RateLimit: so much per key a window, and how long to wait past it', () => {
  test('within the amount nothing waits; past it the key waits for the end of its window, other keys do not', () => {
    const limit = new RateLimit(100)
    expect(limit.take('a', 60)).toBe(0)
    expect(limit.take('a', 40)).toBe(0)
    const wait = limit.take('a', 1)
    expect(wait).toBeGreaterThan(0)
    expect(wait).toBeLessThanOrEqual(1_000 + 10)
    expect(limit.take('b', 100)).toBe(0)
  })

  test('far past it, the key waits as many windows as what went over fills: 4 MiB at 1 MiB a second, about 3 s more', () => {
    const limit = new RateLimit(1024 * 1024)
    const wait = limit.take('peer', 4 * 1024 * 1024)
    expect(wait).toBeGreaterThan(3_000)
    expect(wait).toBeLessThanOrEqual(4_000 + 10)
  })

  test('a new window lets the key in again', async () => {
    const limit = new RateLimit(2)
    expect([limit.allows('k'), limit.allows('k'), limit.allows('k')]).toEqual([true, true, false])
    await new Promise((r) => setTimeout(r, 1_050))
    expect(limit.allows('k')).toBe(true)
  })

  test('a window of a minute; Infinity for no limit', () => {
    const perMinute = new RateLimit(1, 60)
    expect(perMinute.take('k')).toBe(0)
    // The second is paid for by the next window: it waits out this one and that one.
    const wait = perMinute.take('k')
    expect(wait).toBeGreaterThan(119_000)
    expect(wait).toBeLessThanOrEqual(120_000 + 10)
    const none = new RateLimit(Number.POSITIVE_INFINITY)
    for (let i = 0; i < 100; i++) expect(none.take('k', 1e9)).toBe(0)
  })

  test('property: in one window, what is let through without a wait never exceeds the amount', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.array(fc.integer({ min: 1, max: 5_000 }), { maxLength: 50 }), (amount, takes) => {
        const limit = new RateLimit(amount)
        let through = 0
        for (const n of takes) if (limit.take('k', n) === 0) through += n
        expect(through).toBeLessThanOrEqual(amount)
      }),
    )
  })
})
