// A relay's presence registry without libp2p: records signed as nodes sign them, watchers that collect what they are
// handed. And the records themselves: signed, checked, and what a relay or node refuses to read.
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import fc from 'fast-check'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { libp2pPrivateKey, peerIdOfKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import {
  encodePresence,
  maxClockSkewMs,
  maxWatches,
  openRecord,
  readAnnouncement,
  readFromRelay,
  readToRelay,
  signRecord,
  type Announcement,
  type PresenceRecord,
} from '../../../../src/transport/libp2p/presence.ts'
import { PresenceRegistry, type Watcher } from '../../../../src/transport/libp2p/presenceRegistry.ts'
import { sleep } from '../support.ts'

const NOW = 1_700_000_000_000
const [a, b, c] = [anvilKeys[4]!, anvilKeys[5]!, anvilKeys[6]!].map((key: Hex) => ({
  key,
  address: privateKeyToAddress(key).toLowerCase(),
  peerId: peerIdOfKey(key),
}))

const announcement = (fields: Partial<Announcement> = {}): Announcement => ({ v: 1, session: 's1', addrs: ['/p2p-circuit/p2p/x'], ts: NOW, ...fields })
const record = (who: typeof a, fields: Partial<Announcement> = {}) => signRecord(libp2pPrivateKey(who!.key), who!.peerId.toString(), announcement(fields))

const registries: PresenceRegistry[] = []
afterEach(() => {
  for (const r of registries.splice(0)) r.stop()
})

function registry(minPushIntervalMs = 0, maxRecords?: number) {
  const clock = { now: NOW }
  const r = new PresenceRegistry({ minPushIntervalMs, now: () => clock.now, ...(maxRecords ? { maxRecords } : {}) })
  registries.push(r)
  return { r, clock }
}

function watcher(who: typeof a): Watcher & { got: PresenceRecord[]; goneGot: string[] } {
  const got: PresenceRecord[] = []
  const goneGot: string[] = []
  return {
    peer: who!.peerId.toString(),
    watching: new Set(),
    send: (records) => got.push(...records),
    gone: (addresses) => goneGot.push(...addresses),
    got,
    goneGot,
  }
}

const tsOf = (r: PresenceRecord) => readAnnouncement(new TextEncoder().encode(r.announcement))!.ts

describe('presence records', () => {
  test('signed by the node: opened to its peer id and announcement; any change to it, or another key, and it is refused', async () => {
    const signed = await record(a)
    const opened = await openRecord(signed)
    expect(opened?.peerId.equals(a!.peerId)).toBe(true)
    expect(readAnnouncement(opened!.data)).toEqual(announcement())
    // Another announcement under the same signature, or the record claimed by another peer.
    expect(await openRecord({ ...signed, announcement: JSON.stringify(announcement({ addrs: ['/ip4/10.0.0.1/tcp/1/ws'] })) })).toBeUndefined()
    expect(await openRecord({ ...signed, peer: b!.peerId.toString() })).toBeUndefined()
    expect(await openRecord({ ...signed, sig: `${signed.sig.slice(0, -2)}00` })).toBeUndefined()
    expect(await openRecord({ ...signed, sig: 'zz' })).toBeUndefined()
    // A relay's Ed25519 key names no Sluice node.
    const ed = await generateKeyPair('Ed25519')
    const byRelay = await signRecord(ed, peerIdFromPrivateKey(ed).toString(), announcement())
    expect(await openRecord(byRelay)).toBeUndefined()
  })

  test('what a relay and a node read: any bytes at all give a message of the right shape or nothing, never an exception', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.json().map((j) => new TextEncoder().encode(j)),
        ),
        (bytes) => {
          const toRelay = readToRelay(bytes)
          if (toRelay?.watch) expect(toRelay.watch.every((x) => /^0x[0-9a-f]{40}$/.test(x))).toBe(true)
          const fromRelay = readFromRelay(bytes)
          if (fromRelay) expect(Array.isArray(fromRelay.records)).toBe(true)
        },
      ),
    )
    expect(readToRelay(encodePresence({ watch: ['0xABCDEF0000000000000000000000000000000000'] }))).toBeUndefined()
    expect(readToRelay(encodePresence({ watch: Array.from({ length: 513 }, () => a!.address) }))).toBeUndefined()
    // What a relay says is gone: lowercase addresses only, the rest left out; a relay from before says none.
    expect(readFromRelay(encodePresence({ records: [], gone: [a!.address, '0xABCDEF0000000000000000000000000000000000', 'x'] }))).toEqual({
      records: [],
      gone: [a!.address],
    })
    expect(readFromRelay(encodePresence({ records: [] }))).toEqual({ records: [] })
  })
})

describe("a relay's presence registry", () => {
  test('a watcher is handed the record kept at once, and each newer one; its own never', async () => {
    const { r } = registry()
    const wb = watcher(b)
    expect(r.put(a!.peerId, await record(a))).toBe(true)
    r.watch(wb, [a!.address, c!.address, b!.address])
    expect(wb.got.map((x) => x.peer)).toEqual([a!.peerId.toString()])
    // b puts its own: watching itself, it is not handed it.
    r.put(b!.peerId, await record(b))
    r.put(c!.peerId, await record(c))
    expect(wb.got.map((x) => x.peer)).toEqual([a!.peerId.toString(), c!.peerId.toString()])
    r.put(a!.peerId, await record(a, { ts: NOW + 1, session: 's2' }))
    expect(wb.got.map(tsOf)).toEqual([NOW, NOW, NOW + 1])
    expect(r.stats()).toEqual({ records: 3, watched: 3, watches: 3 })
  })

  test("a record is taken only from the peer it names, newer than the one kept, and within the receivers' clock window", async () => {
    const { r } = registry()
    const wc = watcher(c)
    r.watch(wc, [a!.address])
    // b hands on a's record: refused (only a's own connection may put it).
    expect(r.put(b!.peerId, await record(a))).toBe(false)
    expect(r.put(a!.peerId, await record(a, { ts: NOW - maxClockSkewMs - 1 }))).toBe(false)
    expect(r.put(a!.peerId, await record(a, { ts: NOW + maxClockSkewMs + 1 }))).toBe(false)
    expect(r.put(a!.peerId, { peer: a!.peerId.toString(), announcement: '{"v":3}', sig: '00' })).toBe(false)
    expect(r.put(a!.peerId, await record(a, { ts: NOW }))).toBe(true)
    expect(r.put(a!.peerId, await record(a, { ts: NOW }))).toBe(false)
    expect(r.put(a!.peerId, await record(a, { ts: NOW - 1 }))).toBe(false)
    expect(wc.got).toHaveLength(1)
  })

  test('records go when their node leaves, or once too old; a full registry lets the oldest put go first', async () => {
    const { r, clock } = registry(0, 2)
    r.put(a!.peerId, await record(a))
    r.put(b!.peerId, await record(b, { ts: NOW + 1 }))
    r.left(a!.peerId)
    expect(r.stats().records).toBe(1)
    r.put(a!.peerId, await record(a, { ts: NOW + 2 }))
    r.put(c!.peerId, await record(c, { ts: NOW + 3 }))
    // b was put longest ago: it went for c.
    const wa = watcher(a)
    r.watch(wa, [b!.address, c!.address])
    expect(wa.got.map((x) => x.peer)).toEqual([c!.peerId.toString()])
    clock.now = NOW + maxClockSkewMs + 3
    r.sweep()
    expect(r.stats().records).toBe(1)
    clock.now = NOW + maxClockSkewMs + 4
    r.sweep()
    expect(r.stats().records).toBe(0)
  })

  test('watchers are told when a record goes (its node left, it grew too old, or the registry was full): the node is no longer there', async () => {
    const { r, clock } = registry(0, 2)
    const wc = watcher(c)
    const wa = watcher(a)
    r.watch(wc, [a!.address, b!.address])
    r.watch(wa, [a!.address])
    r.put(a!.peerId, await record(a))
    r.left(a!.peerId)
    // Its own watcher is never told of itself, as it is never handed its own record.
    expect([wc.goneGot, wa.goneGot]).toEqual([[a!.address], []])
    r.put(a!.peerId, await record(a, { ts: NOW + 1 }))
    r.put(b!.peerId, await record(b, { ts: NOW + 2 }))
    r.put(c!.peerId, await record(c, { ts: NOW + 3 }))
    // Full (2 records): a's, put longest ago, went for c's.
    expect(wc.goneGot).toEqual([a!.address, a!.address])
    clock.now = NOW + maxClockSkewMs + 3
    r.sweep()
    expect(wc.goneGot).toEqual([a!.address, a!.address, b!.address])
    // A peer that leaves with no record kept tells nobody anything.
    r.left(a!.peerId)
    expect(wc.goneGot).toHaveLength(3)
  })

  test('a burst of records from one node reaches its watchers at most once a second: the first at once, then only the newest', async () => {
    const r = new PresenceRegistry({ minPushIntervalMs: 200 })
    registries.push(r)
    const wb = watcher(b)
    r.watch(wb, [a!.address])
    const now = Date.now()
    for (let i = 0; i < 5; i++) r.put(a!.peerId, await signRecord(libp2pPrivateKey(a!.key), a!.peerId.toString(), announcement({ ts: now + i })))
    expect(wb.got.map(tsOf)).toEqual([now])
    await sleep(300)
    expect(wb.got.map(tsOf)).toEqual([now, now + 4])
  })

  test(`a watcher watches at most ${maxWatches} addresses; what it watched is let go with it`, () => {
    const { r } = registry()
    const wa = watcher(a)
    const many = Array.from({ length: maxWatches + 10 }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`)
    r.watch(wa, many)
    expect(wa.watching.size).toBe(maxWatches)
    expect(r.stats().watched).toBe(maxWatches)
  })
})
