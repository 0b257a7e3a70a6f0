import { describe, expect, test } from 'vitest'
import { DropLog } from '../../../../src/transport/libp2p/dropLog.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('DropLog: counts by reason, told once per source per interval', () => {
  test('a flood of drops from one source is one report per interval, with the counts; the totals keep everything', async () => {
    const reports: { source: string; counts: object }[] = []
    const log = new DropLog(['tooOften', 'tooLarge'] as const, { intervalMs: 100, report: (source, counts) => reports.push({ source, counts }) })
    for (let i = 0; i < 1000; i++) log.count('peer-1', 'tooOften')
    log.count('peer-1', 'tooLarge')
    log.count('10.0.0.1', 'tooLarge', 3)
    expect(reports).toEqual([])
    await sleep(180)
    expect(reports).toEqual([
      { source: 'peer-1', counts: { tooOften: 1000, tooLarge: 1 } },
      { source: '10.0.0.1', counts: { tooLarge: 3 } },
    ])
    log.count('peer-1', 'tooOften')
    log.stop()
    expect(reports.at(-1)).toEqual({ source: 'peer-1', counts: { tooOften: 1 } })
    expect(log.totals()).toEqual({ tooOften: 1001, tooLarge: 4 })
  })

  test('past maxSources in one interval, the others are one line; a report that throws stops nothing', () => {
    const reports: string[] = []
    const log = new DropLog(['x'] as const, {
      intervalMs: 60_000,
      maxSources: 2,
      report: (source) => {
        reports.push(source)
        throw new Error('the log is broken')
      },
    })
    for (let i = 0; i < 10; i++) log.count(`source-${i}`, 'x')
    log.flush()
    expect(reports).toEqual(['source-0', 'source-1', 'others'])
    expect(log.totals()).toEqual({ x: 10 })
    log.stop()
  })

  test('without a report, it only counts', () => {
    const log = new DropLog(['a', 'b'] as const)
    log.count('s', 'a')
    expect(log.totals()).toEqual({ a: 1, b: 0 })
    log.stop()
  })
})
