import { describe, expect, test } from 'vitest'
import { createLogger } from '../../../src/log/logger.ts'
import { createSyncProgress, duration } from '../../../src/log/syncProgress.ts'

/** A sync followed with a clock the test moves: what it logs, as JSON lines read back. */
function follow(options: { windowMs?: number } = {}) {
  let time = 1_000_000
  const lines: Record<string, unknown>[] = []
  const logger = createLogger({ level: 'info', format: 'json', write: (line) => lines.push(JSON.parse(line)), now: () => time })
  const progress = createSyncProgress({ logger, now: () => time, ...options })
  return {
    lines,
    at(ms: number, syncedBlock: number, blocksToSync: number) {
      time = 1_000_000 + ms
      progress.sample({ syncedBlock: BigInt(syncedBlock), blocksToSync: BigInt(blocksToSync) })
    },
    times: () => lines.map((l) => Date.parse(l.time as string) - 1_000_000),
  }
}

describe('sync progress', () => {
  test('at most one line a second however often it is sampled, with blocks to go, blocks a second and the time left', () => {
    const sync = follow()
    // 100 blocks a second, sampled every 250 ms for 5 s.
    for (let ms = 0; ms <= 5_000; ms += 250) sync.at(ms, 1_000 + ms / 10, 1_000 - ms / 10)
    expect(sync.times()).toEqual([0, 1_000, 2_000, 3_000, 4_000, 5_000])
    expect(sync.lines[0]).toMatchObject({ level: 'info', msg: 'Syncing: 1000 blocks to go', blocksToSync: '1000', syncedBlock: '1000' })
    expect(sync.lines[1]).toMatchObject({
      msg: 'Syncing: 900 blocks to go, 100 blocks/s, about 9 s left',
      blocksToSync: '900',
      blocksPerSecond: 100,
      timeLeft: '9 s',
    })
    expect(sync.lines[5]).toMatchObject({ msg: 'Syncing: 500 blocks to go, 100 blocks/s, about 5 s left', syncedBlock: '1500' })
  })

  test('samples closer than a second apart never make two lines, whatever their spacing', () => {
    const sync = follow()
    const gaps = [0, 999, 1, 400, 650, 1_000, 10, 2_500, 999, 2]
    let ms = 0
    for (const gap of gaps) {
      ms += gap
      sync.at(ms, ms, 10_000)
    }
    const times = sync.times()
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1_000)
    expect(times).toEqual([0, 1_000, 2_050, 3_050, 5_560, 6_561])
  })

  test('the speed is that of the recent past: a stall shows as 0 blocks/s once it fills the window', () => {
    const sync = follow({ windowMs: 2_000 })
    for (let ms = 0; ms <= 3_000; ms += 500) sync.at(ms, ms, 5_000)
    // Then nothing moves for 3 s.
    for (let ms = 3_500; ms <= 6_000; ms += 500) sync.at(ms, 3_000, 2_000)
    expect(sync.lines.at(-1)).toMatchObject({ msg: 'Syncing: 2000 blocks to go, 0 blocks/s', blocksPerSecond: 0 })
    expect(sync.lines.at(-1)).not.toHaveProperty('timeLeft')
  })

  test('nothing while there is nothing to sync (before the first look at the chain, or caught up)', () => {
    const sync = follow()
    sync.at(0, 0, 0)
    sync.at(2_000, 10, 0)
    expect(sync.lines).toEqual([])
    sync.at(3_000, 10, 5)
    expect(sync.lines).toHaveLength(1)
  })

  test('time left as a person reads it', () => {
    expect([0.2, 42, 185, 7_800, 86_400].map(duration)).toEqual(['1 s', '42 s', '3 min 5 s', '2 h 10 min', '24 h 0 min'])
  })
})
