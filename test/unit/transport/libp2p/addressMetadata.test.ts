import fc from 'fast-check'
import { privateKeyToAccount, privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { openAddressMetadata } from '../../../../src/transport/libp2p/addressMetadata.ts'
import { libp2pPrivateKey, peerIdOfKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { signRecord, type Announcement } from '../../../../src/transport/libp2p/presence.ts'

// A pathfinding service hands on each hop's presence record as Raiden's address_metadata (docs/decisions/0072, 0073);
// a node uses one only when it is the hop's own: signed by the key of the peer id it names, that key the hop's.

const [keyB, keyC] = [anvilKeys[5]!, anvilKeys[6]!]
const [B, C] = [privateKeyToAddress(keyB), privateKeyToAddress(keyC)]
const peerB = peerIdOfKey(keyB).toString()
const relay = '/ip4/127.0.0.1/tcp/4001/ws/p2p/16Uiu2HAmRelayRelayRelayRelayRelayRelayRelayRelayRelay'

const announcement = (ts = Date.now()): Announcement => ({ v: 1, session: 's1', addrs: [`${relay}/p2p-circuit/p2p/${peerB}`], ts })

/** B's record under Raiden's names, as the service answers it. */
async function metadataOfB(a = announcement()) {
  const record = await signRecord(libp2pPrivateKey(keyB), peerB, a)
  return { user_id: record.peer, displayname: record.sig, capabilities: record.announcement }
}

describe('a presence record handed on as address_metadata', () => {
  test("B's own record opens as B's: its public key, which B's messages recover to", async () => {
    const opened = await openAddressMetadata(B, await metadataOfB())
    expect(opened.ok).toBe(true)
    if (!opened.ok) return
    // 64 bytes, x || y: what a signature of B recovers.
    expect(opened.publicKey).toBe(`0x${privateKeyToAccount(keyB).publicKey.slice(4)}`)
    expect(opened.peerId.toString()).toBe(peerB)
    // Whatever the case of the address it is asked for.
    expect((await openAddressMetadata(B.toLowerCase() as typeof B, await metadataOfB())).ok).toBe(true)
  })

  test("B's record offered as C's is not C's", async () => {
    expect(await openAddressMetadata(C, await metadataOfB())).toEqual({ ok: false, reason: expect.stringContaining(`the key of ${B}, not of ${C}`) })
  })

  test('a forged record: another announcement under B’s signature, a signature altered, another key’s signature under B’s peer id', async () => {
    const good = await metadataOfB()
    const moved = { ...good, capabilities: JSON.stringify({ ...announcement(), addrs: ['/ip4/203.0.113.9/tcp/1/ws'] }) }
    const flipped = { ...good, displayname: good.displayname.replace(/.$/, (d) => (d === '0' ? '1' : '0')) }
    const byC = await signRecord(libp2pPrivateKey(keyC), peerB, announcement())
    for (const forged of [moved, flipped, { ...good, displayname: byC.sig }])
      expect(await openAddressMetadata(B, forged)).toEqual({ ok: false, reason: 'its signature does not check against the key of its user_id' })
  })

  test('garbage in each field, a record that signs no announcement, what is not a record: never used, never thrown', async () => {
    const good = await metadataOfB()
    const garbage = [undefined, null, 7, 'x', [], {}, { ...good, user_id: 'not a peer id' }, { ...good, user_id: 42 }, { ...good, displayname: 'zz' }]
    for (const field of ['user_id', 'displayname', 'capabilities'] as const)
      garbage.push({ ...good, [field]: undefined }, { ...good, [field]: 'a'.repeat(30_000) })
    for (const value of garbage) expect((await openAddressMetadata(B, value)).ok).toBe(false)
    // Signed by B, but not an announcement: dropped as the relays' records are.
    const record = await signRecord(libp2pPrivateKey(keyB), peerB, { v: 2 } as unknown as Announcement)
    expect(await openAddressMetadata(B, { user_id: record.peer, displayname: record.sig, capabilities: record.announcement })).toEqual({
      ok: false,
      reason: 'its capabilities are not a presence announcement',
    })
  })

  test('a record announced beyond the clock window, either way (an old one replayed), is dropped as a relay would drop it', async () => {
    const now = Date.now()
    expect((await openAddressMetadata(B, await metadataOfB(announcement(now - 9 * 60_000)), now)).ok).toBe(true)
    expect(await openAddressMetadata(B, await metadataOfB(announcement(now - 11 * 60_000)), now)).toEqual({
      ok: false,
      reason: 'it was announced 660 s from our clock, beyond 600 s',
    })
    expect((await openAddressMetadata(B, await metadataOfB(announcement(now + 11 * 60_000)), now)).ok).toBe(false)
  })

  test('property: whatever a service sends as a record, opening it never throws, and only an untouched good record opens', async () => {
    const good = await metadataOfB()
    const field = fc.oneof(fc.string(), fc.constantFrom(good.user_id, good.displayname, good.capabilities), fc.anything())
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.anything(), fc.record({ user_id: field, displayname: field, capabilities: field }, { requiredKeys: [] })), async (value) => {
        const opened = await openAddressMetadata(B, value)
        const v = value as Record<string, unknown> | null
        const untouched = !!v && v.user_id === good.user_id && v.displayname === good.displayname && v.capabilities === good.capabilities
        expect(opened.ok).toBe(untouched)
      }),
      { numRuns: 300 },
    )
  })
})
