import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest'
import { createRequestActivity } from '../../../worker/requestActivity.ts'

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

/** Whether the promise has settled once the clock has moved `ms`. */
async function settledAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false
  void promise.then(() => (settled = true))
  await vi.advanceTimersByTimeAsync(ms)
  return settled
}

describe('requestActivity', () => {
  test('quiet waits for a first request, however long it takes, then counts from its answer', async () => {
    const activity = createRequestActivity()
    const quiet = activity.quiet(100)
    expect(await settledAfter(quiet, 10_000)).toBe(false)
    await activity.track(async () => 'ok')
    expect(await settledAfter(quiet, 99)).toBe(false)
    expect(await settledAfter(quiet, 1)).toBe(true)
  })

  test('a request in flight holds quiet off however long it takes, and the quiet time counts from its answer', async () => {
    const activity = createRequestActivity()
    let answer!: (value: string) => void
    const answered = activity.track(() => new Promise<string>((resolve) => (answer = resolve)))
    const quiet = activity.quiet(100)
    expect(await settledAfter(quiet, 1_000)).toBe(false)
    answer('done')
    expect(await answered).toBe('done')
    expect(await settledAfter(quiet, 99)).toBe(false)
    expect(await settledAfter(quiet, 1)).toBe(true)
  })

  test('requests that keep coming within the quiet time push it back; a failed answer counts as answered', async () => {
    const activity = createRequestActivity()
    const quiet = activity.quiet(100)
    for (let i = 0; i < 5; i++) {
      expect(await settledAfter(quiet, 60)).toBe(false)
      await activity.track(async () => 'ok')
    }
    await expect(activity.track(async () => Promise.reject(new Error('bad request')))).rejects.toThrow('bad request')
    expect(await settledAfter(quiet, 99)).toBe(false)
    expect(await settledAfter(quiet, 1)).toBe(true)
  })
})
