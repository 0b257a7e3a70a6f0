import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { LineIntake, type LineLimits } from '../../../src/monitor/lineIntake.ts'

const peer = '0x00000000000000000000000000000000000000a1' as Address
const other = '0x00000000000000000000000000000000000000b2' as Address
const limits: LineLimits = { maxLineLength: 10, perPeerBurst: 2, perPeerPerSecond: 1, maxInFlight: 3 }

// An intake whose lines say what they come to: 'ok', 'throw' (a bug), or 'wait' (until released); the limits first.
function intake() {
  const counted: string[] = []
  const waiting: (() => void)[] = []
  const lines: LineIntake<string> = new LineIntake<string>({
    limits,
    now: () => 0,
    decide: async (line, from, again) => {
      const refused = lines.admit(line, from, again)
      if (refused) return `refused ${refused.reason}${refused.detail ? ` (${refused.detail})` : ''}`
      if (line === 'throw') throw new Error('a bug')
      if (line === 'wait') await new Promise<void>((r) => waiting.push(r))
      return 'ok'
    },
    internalError: (_, error) => `internal error: ${(error as Error).message}`,
    count: (_, outcome) => {
      counted.push(outcome)
      return outcome
    },
  })
  return { lines, counted, release: () => waiting.splice(0).forEach((r) => r()) }
}

describe("a service's intake of lines", () => {
  test('every line ends as one counted outcome, a bug in its handling too', async () => {
    const { lines, counted } = intake()
    expect(await lines.handle('ok', peer)).toBe('ok')
    expect(await lines.handle('throw', peer)).toBe('internal error: a bug')
    expect(counted).toEqual(['ok', 'internal error: a bug'])
  })

  test("too long a line, a peer beyond its rate (a line taken again is not counted again; another peer's bucket is its own)", async () => {
    const { lines } = intake()
    expect(await lines.handle('x'.repeat(11), peer)).toBe('refused too_large (11 characters)')
    expect([await lines.handle('ok', peer), await lines.handle('ok', peer)]).toEqual(['ok', 'ok'])
    expect(await lines.handle('ok', peer)).toBe('refused rate_limited')
    expect(await lines.handle('ok', peer, true)).toBe('ok')
    expect(await lines.handle('ok', other)).toBe('ok')
  })

  test('beyond the lines in flight: overloaded; stop refuses new lines and waits for those under way', async () => {
    const { lines, release } = intake()
    const waiting = [lines.handle('wait', peer), lines.handle('wait', other), lines.handle('wait', peer, true)]
    expect(await lines.handle('ok', other)).toBe('refused overloaded')
    let stopped = false
    const stopping = lines.stop().then(() => (stopped = true))
    await new Promise((r) => setTimeout(r, 20))
    expect(stopped).toBe(false)
    expect(await lines.handle('ok', other, true)).toBe('refused overloaded (stopping)')
    release()
    expect(await Promise.all(waiting)).toEqual(['ok', 'ok', 'ok'])
    await stopping
  })
})
