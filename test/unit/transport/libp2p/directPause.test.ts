import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { DirectPause } from '../../../../src/transport/libp2p/directPause.ts'

describe('DirectPause: when a peer’s direct path may be tried again', () => {
  const clock = () => {
    let now = 1_000_000
    return {
      now: () => now,
      pass: (ms: number) => {
        now += ms
      },
    }
  }

  test('doubles from the first pause to the longest; a connection up clears it; peers apart', () => {
    const t = clock()
    const pause = new DirectPause({ initialMs: 10_000, maxMs: 60_000 }, t.now)
    expect(pause.waitMs('a')).toBe(0)
    expect([1, 2, 3, 4, 5].map(() => pause.failed('a'))).toEqual([10_000, 20_000, 40_000, 60_000, 60_000])
    expect(pause.waitMs('a')).toBe(60_000)
    expect(pause.waitMs('b')).toBe(0)
    t.pass(59_999)
    expect(pause.waitMs('a')).toBe(1)
    t.pass(1)
    expect(pause.waitMs('a')).toBe(0)
    pause.clear('a')
    expect(pause.failed('a')).toBe(10_000)
  })

  test('failures this close together are one: a connection that closes as it opens and its failed dial pause once', () => {
    const t = clock()
    const pause = new DirectPause({ initialMs: 5_000, maxMs: 60_000 }, t.now, { oneFailureMs: 2_000 })
    expect(pause.failed('a')).toBe(5_000)
    t.pass(300)
    // The dial's failure, 300 ms after its connection closed: the same failure, the pause unchanged.
    expect(pause.failed('a')).toBe(5_000)
    expect(pause.waitMs('a')).toBe(4_700)
    // The next real failure, after the pause: counted, the pause doubles.
    t.pass(4_700)
    expect(pause.failed('a')).toBe(10_000)
    // Another peer's failure is its own.
    expect(pause.failed('b')).toBe(5_000)
  })

  test('a hold pauses without counting a failure; a pause under way is never shortened', () => {
    const t = clock()
    const pause = new DirectPause({ initialMs: 1_000, maxMs: 8_000 }, t.now)
    pause.hold('a', 5_000)
    expect(pause.waitMs('a')).toBe(5_000)
    // The first failure's pause (1 s) ends before the hold: the hold stands; the count starts at the first.
    expect(pause.failed('a')).toBe(1_000)
    expect(pause.waitMs('a')).toBe(5_000)
    expect(pause.failed('a')).toBe(2_000)
  })

  test('property: the wait is never negative nor past the longest pause, whatever happens in whatever order', () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('failed' as const), peer: fc.constantFrom('a', 'b') }),
      fc.record({ kind: fc.constant('clear' as const), peer: fc.constantFrom('a', 'b') }),
      fc.record({ kind: fc.constant('pass' as const), ms: fc.integer({ min: 0, max: 100_000 }) }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const t = clock()
        const pause = new DirectPause({ initialMs: 500, maxMs: 30_000 }, t.now)
        for (const s of steps) {
          if (s.kind === 'pass') t.pass(s.ms)
          else if (s.kind === 'failed') expect(pause.failed(s.peer)).toBeLessThanOrEqual(30_000)
          else pause.clear(s.peer)
          for (const peer of ['a', 'b']) {
            expect(pause.waitMs(peer)).toBeGreaterThanOrEqual(0)
            expect(pause.waitMs(peer)).toBeLessThanOrEqual(30_000)
          }
        }
      }),
    )
  })
})
