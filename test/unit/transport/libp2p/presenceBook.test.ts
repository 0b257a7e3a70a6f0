// Who is online as the relays say: the records they hand on and the `gone` they send, without libp2p.
import { describe, expect, test } from 'vitest'
import { maxClockSkewMs, type PresenceRecord } from '../../../../src/transport/libp2p/presence.ts'
import { PresenceBook } from '../../../../src/transport/libp2p/presenceBook.ts'

const NOW = 1_700_000_000_000
const A = '0x00000000000000000000000000000000000000aa'
const record = (ts: number): PresenceRecord => ({ peer: 'peer-a', announcement: JSON.stringify({ v: 1, session: 's', addrs: [], ts }), sig: '00' })

describe('PresenceBook', () => {
  test('online while one relay keeps a fresh record: its newest record; offline once every relay that kept one says it is gone', () => {
    const clock = { now: NOW }
    const book = new PresenceBook(() => clock.now)
    expect(book.online(A)).toBeUndefined()
    book.put(A, 'relay1', record(NOW), NOW)
    book.put(A.toUpperCase().replace('0X', '0x'), 'relay2', record(NOW + 5), NOW + 5)
    expect(book.online(A)).toEqual(record(NOW + 5))
    // An older record from a relay late to hand it on does not replace the newest.
    book.put(A, 'relay1', record(NOW - 10), NOW - 10)
    expect(book.online(A)).toEqual(record(NOW + 5))
    book.gone(A, 'relay2')
    expect(book.online(A)).toEqual(record(NOW + 5))
    book.gone(A, 'relay1')
    expect(book.online(A)).toBeUndefined()
    expect(book.size).toBe(0)
  })

  test('a record older than the clock window counts for nothing; a lost link to a relay takes what it said', () => {
    const clock = { now: NOW }
    const book = new PresenceBook(() => clock.now)
    book.put(A, 'relay1', record(NOW), NOW)
    clock.now = NOW + maxClockSkewMs
    expect(book.online(A)).toBeDefined()
    clock.now = NOW + maxClockSkewMs + 1
    expect(book.online(A)).toBeUndefined()
    book.put(A, 'relay1', record(clock.now), clock.now)
    expect(book.online(A)).toBeDefined()
    book.lost('relay1')
    expect(book.online(A)).toBeUndefined()
  })
})
