import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { EventLog } from '../../../src/api/eventLog.ts'

/** The events a stream that resumes at `from` reads, as GET /events reads them. */
function readFrom(log: EventLog, from: number) {
  const read = []
  for (let seq = from; seq < log.next; seq++) read.push(log.at(seq))
  return read
}

describe('EventLog', () => {
  it('resuming after any id it gave returns exactly the events after it, or too_old once they are gone', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 20 }), fc.nat({ max: 60 }), fc.nat({ max: 60 }), (capacity, appended, seenRaw) => {
        const log = new EventLog({ capacity, run: 'r1' })
        for (let i = 1; i <= appended; i++) log.append('e', String(i))
        const seen = seenRaw % (appended + 1)
        const resumed = log.resume(log.idOf(seen))
        if (appended - seen > capacity) {
          expect(resumed).toEqual({ missed: 'too_old' })
          return
        }
        expect(resumed).toEqual({ from: seen + 1 })
        const read = readFrom(log, seen + 1)
        // Every event after the one seen, in order, none twice: their data are the numbers seen+1 .. appended.
        expect(read.map((e) => e?.data)).toEqual(Array.from({ length: appended - seen }, (_, i) => String(seen + 1 + i)))
        expect(read.map((e) => e?.id)).toEqual(read.map((_, i) => `r1-${seen + 1 + i}`))
      }),
    )
  })

  it('any other string is unknown, never a place to resume from', () => {
    const log = new EventLog({ capacity: 5, run: 'r1' })
    for (let i = 0; i < 3; i++) log.append('e', '{}')
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), (id) => {
        const given = /^r1-(0|[1-3])$/.test(id)
        expect(log.resume(id)).toEqual(given ? { from: Number(id.slice(3)) + 1 } : { missed: 'unknown' })
      }),
    )
    for (const id of ['r1-4', 'r1-01', 'r2-1', 'r1-1e3', 'r1-9007199254740993', ' r1-1', 'r1-1 ']) expect(log.resume(id), id).toEqual({ missed: 'unknown' })
  })

  it('the head id stands for every event so far; a new log has given none', () => {
    const log = new EventLog({ run: 'abc' })
    expect(log.headId).toBe('abc-0')
    expect(log.resume(log.headId)).toEqual({ from: 1 })
    log.append('status', '{"status":"ready"}')
    expect(log.headId).toBe('abc-1')
    expect(log.at(1)).toEqual({ id: 'abc-1', event: 'status', data: '{"status":"ready"}' })
    expect(log.at(0)).toBeUndefined()
    expect(log.at(2)).toBeUndefined()
  })

  it('each run has its own ids, so ids of a node before a restart are unknown after it', () => {
    const before = new EventLog()
    const after = new EventLog()
    expect(before.run).not.toBe(after.run)
    before.append('e', '{}')
    expect(after.resume(before.headId)).toEqual({ missed: 'unknown' })
  })

  it('wakes its listeners on every append until they unsubscribe', () => {
    const log = new EventLog({ capacity: 2 })
    let woken = 0
    const unsubscribe = log.subscribe(() => woken++)
    expect(log.listenerCount).toBe(1)
    log.append('e', '{}')
    log.append('e', '{}')
    unsubscribe()
    log.append('e', '{}')
    expect([woken, log.listenerCount]).toEqual([2, 0])
  })

  it('refuses a capacity or a run it could not keep its promises with', () => {
    expect(() => new EventLog({ capacity: 0 })).toThrow(RangeError)
    expect(() => new EventLog({ capacity: 1.5 })).toThrow(RangeError)
    expect(() => new EventLog({ run: 'a-b' })).toThrow(RangeError)
  })
})
