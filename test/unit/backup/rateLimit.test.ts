import { expect, test } from 'vitest'
import { rateLimiter } from '../../../src/backup/server/rateLimit.ts'

test('lets `burst` through at once, then one per 60/perMinute seconds, each key on its own', () => {
  let t = 0
  const limiter = rateLimiter({ perMinute: 6, burst: 3, now: () => t })
  expect([limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0])
  // Empty: the next token comes in 10 s.
  expect(limiter.take('a')).toBe(10)
  expect(limiter.take('b')).toBe(0)
  t = 9_000
  expect(limiter.take('a')).toBe(1)
  t = 10_000
  expect(limiter.take('a')).toBe(0)
  expect(limiter.take('a')).toBe(10)
  // Never more than the burst saved up, however long idle.
  t = 10_000_000
  expect([limiter.take('a'), limiter.take('a'), limiter.take('a'), limiter.take('a')]).toEqual([0, 0, 0, 10])
})

test('keeps at most maxKeys keys: a flood of new keys never grows it without bound, and a busy key keeps its state', () => {
  let t = 0
  const limiter = rateLimiter({ perMinute: 1, burst: 1, maxKeys: 100, now: () => t })
  expect(limiter.take('busy')).toBe(0)
  expect(limiter.take('busy')).toBe(60)
  for (let i = 0; i < 10_000; i++) {
    limiter.take(`flood-${i}`)
    // The busy key is used now and then, so it is never the least recently used.
    if (i % 50 === 0) expect(limiter.take('busy')).toBeGreaterThan(0)
    expect(limiter.size).toBeLessThanOrEqual(100)
    t += 1
  }
  // Idle keys whose buckets have refilled are forgotten at the next sweep.
  t += 120_000
  limiter.take('late')
  expect(limiter.size).toBe(1)
})
