import { afterEach, describe, expect, test } from 'vitest'
import { Announcer } from '../../../../src/transport/libp2p/announcer.ts'
import type { Announcement } from '../../../../src/transport/libp2p/presence.ts'
import { eventually, sleep } from '../support.ts'

const made: Announcer[] = []
afterEach(() => {
  for (const a of made.splice(0)) a.stop()
})

function announcer(intervalMs = 60_000) {
  const published: Announcement[] = []
  const state = { addresses: ['/ip4/127.0.0.1/tcp/1/ws/p2p/R/p2p-circuit/p2p/X'] }
  const a = new Announcer({
    publish: async (announcement) => published.push(announcement),
    addresses: () => state.addresses,
    intervalMs,
  })
  made.push(a)
  return { a, published, state }
}

describe('the announcer', () => {
  test('announces soon after start, once for a burst of reasons, then every interval; nothing before start or after stop', async () => {
    const { a, published } = announcer(150)
    a.soon()
    await sleep(120)
    expect(published).toEqual([])
    a.start()
    a.soon()
    a.soon()
    await eventually(() => expect(published).toHaveLength(1))
    expect(published[0]).toMatchObject({ v: 1, addrs: ['/ip4/127.0.0.1/tcp/1/ws/p2p/R/p2p-circuit/p2p/X'] })
    expect(Math.abs(published[0]!.ts - Date.now())).toBeLessThan(1_000)
    await eventually(() => expect(published.length).toBeGreaterThanOrEqual(2))
    a.stop()
    const count = published.length
    a.soon()
    await sleep(200)
    expect(published).toHaveLength(count)
  })

  test('says nothing while it has no circuit address; a new start is a new session', async () => {
    const { a, published, state } = announcer()
    state.addresses = []
    a.start()
    await sleep(150)
    a.announce()
    expect(published).toEqual([])
    state.addresses = ['/p2p-circuit/p2p/X']
    a.announce()
    await eventually(() => expect(published).toHaveLength(1))
    a.stop()
    a.start()
    a.announce()
    await eventually(() => expect(published).toHaveLength(2))
    expect(published[1]!.session).not.toBe(published[0]!.session)
  })
})
