import { describe, expect, test } from 'vitest'
import { SyncLoop } from '../../../src/chain/syncLoop.ts'

/** The loop around a chain sync step (src/chain/syncLoop.ts): one step at a time, rounds, failures reported. */

function steps(news: boolean[]) {
  let running = 0
  let most = 0
  let calls = 0
  const step = async () => {
    calls++
    running++
    most = Math.max(most, running)
    await new Promise((r) => setTimeout(r, 5))
    running--
    return news.shift() ?? false
  }
  return { step, stats: () => ({ calls, most }) }
}

describe('SyncLoop', () => {
  test('whoever asks while a step is under way shares it: never two steps at once', async () => {
    const s = steps([true, true, false])
    const loop = new SyncLoop({ step: s.step, pollingInterval: 1_000, onError: () => {} })
    const [a, b, c] = [loop.syncOnce(), loop.syncOnce(), loop.syncOnce()]
    expect(a).toBe(b)
    expect(await Promise.all([a, b, c])).toEqual([true, true, true])
    await loop.catchUp()
    expect(s.stats()).toEqual({ calls: 3, most: 1 })
  })

  test('a round steps until nothing is new, reports a failed one and goes on; nothing steps after stop', async () => {
    const errors: unknown[] = []
    let rounds = 0
    let calls = 0
    const loop = new SyncLoop({
      step: async () => {
        calls++
        if (calls === 2) throw new Error('the endpoint failed')
        return calls === 1 || calls === 3
      },
      pollingInterval: 5,
      onError: (e) => errors.push(e),
      afterRound: () => rounds++,
    })
    loop.start()
    loop.start()
    await new Promise((r) => setTimeout(r, 60))
    await loop.stop()
    expect(errors).toEqual([new Error('the endpoint failed')])
    expect(rounds).toBeGreaterThanOrEqual(2)
    const after = calls
    expect(await loop.syncOnce()).toBe(false)
    await new Promise((r) => setTimeout(r, 20))
    expect(calls).toBe(after)
  })
})
