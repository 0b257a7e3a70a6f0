import '../../../../src/transport/libp2p/nodePolyfills.ts'
import fc from 'fast-check'
import { getAddress, hexToBytes, sha256, type Address, type Hex } from 'viem'
import { privateKeyToAccount, privateKeyToAddress } from 'viem/accounts'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, beforeEach, describe, expect, test, vi } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import type { PeerRecordNotice } from '../../../../src/node/notices.ts'
import { peerRecordsOf, serviceRouteRecords, takeTransferRecords, type PeerRecords } from '../../../../src/node/runtime/routeMetadata.ts'
import { secretForTarget, secretFromMetadata } from '../../../../src/node/runtime/secretInMetadata.ts'
import type { AddressMetadata, LockedTransfer, Signed } from '../../../../src/protocol/messages/types.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../../../../src/transport/libp2p/libp2pTransport.ts'
import { libp2pPrivateKey, peerIdOfKey } from '../../../../src/transport/libp2p/peerIdentity.ts'
import { signRecord } from '../../../../src/transport/libp2p/presence.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

// The shell's side of a route's address_metadata (docs/decisions/0073), over a real libp2p transport (no relay needed:
// a record handed on is all it takes to know a peer): checked records only, the target's key, the way to the hops we
// send to; anything else dropped, said, and never thrown.

const keys = { A: anvilKeys[4]!, B: anvilKeys[5]!, C: anvilKeys[6]!, D: anvilKeys[7]! }
const [A, B, C, D] = [keys.A, keys.B, keys.C, keys.D].map((k) => privateKeyToAddress(k)) as [Address, Address, Address, Address]
const publicKeyOf = (key: Hex) => `0x${privateKeyToAccount(key).publicKey.slice(4)}` as Hex

/**
 * `key`'s own record under Raiden's names, announcing a circuit through a made-up relay. The one transport keeps what
 * it took across the tests: a test that wants a record taken again signs one later than any before (`ts`).
 */
async function recordOf(key: Hex, ts = Date.now()): Promise<AddressMetadata> {
  const peer = peerIdOfKey(key).toString()
  const relay = '/ip4/127.0.0.1/tcp/4001/ws/p2p/16Uiu2HAkvgKR5mMBBDa8UTbExNNRP5dc5BxRbDeEKo4LuU2zwAwJ'
  const record = await signRecord(libp2pPrivateKey(key), peer, { v: 1, session: `s-${ts}`, addrs: [`${relay}/p2p-circuit/p2p/${peer}`], ts })
  return { user_id: record.peer, displayname: record.sig, capabilities: record.announcement }
}

let transport: Libp2pTransport
/** The peers A's transport reported (a record taken), with their keys. */
const seen: [Address, Hex | undefined][] = []
const dropped: PeerRecordNotice[] = []
let check: PeerRecords
const good: Record<'A' | 'B' | 'C' | 'D', AddressMetadata> = {} as never

beforeAll(async () => {
  transport = createLibp2pTransport({ privateKey: keys.A, relays: [] })
  transport.onPeerSeen!((peer, key) => seen.push([peer, key]))
  await transport.start(() => undefined)
  check = peerRecordsOf(transport, (notice) => dropped.push(notice))
  for (const name of ['A', 'B', 'C', 'D'] as const) good[name] = await recordOf(keys[name])
})
afterAll(async () => {
  await transport?.stop()
})
beforeEach(() => {
  seen.length = 0
  dropped.length = 0
})

describe("a pathfinding service's address_metadata, at the payer", () => {
  test("good records: each route keeps its nodes' records; the target's key encrypts the secret the target opens; the target and the first hops are known to the transport at once", async () => {
    const found = await serviceRouteRecords(check, {
      paths: [
        [A, B, C],
        [A, D, C],
      ],
      // Keys in any case, as a service may write them.
      given: [
        { [A]: good.A, [B.toLowerCase()]: good.B, [C]: good.C },
        { [D]: good.D, [C.toLowerCase()]: good.C },
      ],
      target: C,
    })
    expect(found.routeMetadata).toEqual([
      { [A]: good.A, [B]: good.B, [C]: good.C },
      { [D]: good.D, [C]: good.C },
    ])
    expect(found.targetKey).toBe(publicKeyOf(keys.C))
    // What the payment then does with the key: the target opens the secret from its first LockedTransfer.
    const secret = sha256('0x01')
    const encrypted = secretForTarget({ curve: jsSecp256k1, enabled: true, targetPublicKey: found.targetKey, secret, amount: 5n, paymentId: 1n })!
    const transfer = { type: 'LockedTransfer', target: C, metadata: { routes: [], secret: encrypted } } as unknown as Signed<LockedTransfer>
    expect(secretFromMetadata(jsSecp256k1, transfer, C, hexToBytes(keys.C))).toEqual({ secret, amount: 5n, paymentId: 1n })
    // B, C and D reported with their keys (A is us; nobody else is dialled).
    expect(new Map(seen)).toEqual(
      new Map([
        [B, publicKeyOf(keys.B)],
        [C, publicKeyOf(keys.C)],
        [D, publicKeyOf(keys.D)],
      ]),
    )
    expect(dropped).toEqual([])
  })

  test("a forged record, another address's, a stale one and garbage in each field: dropped and said; the rest of the route is used", async () => {
    const forged = { ...good.C, capabilities: good.C.capabilities.replace('"v":1', '"v":1 ') }
    const stale = await recordOf(keys.D, Date.now() - 11 * 60_000)
    const found = await serviceRouteRecords(check, {
      paths: [
        [A, B, C],
        [A, D, C],
      ],
      given: [
        { [B]: good.D, [C]: forged },
        { [D]: stale, [C]: { ...good.C, user_id: 7 } },
      ],
      target: C,
    })
    expect(found.routeMetadata).toEqual([undefined, undefined])
    expect(found.targetKey).toBeUndefined()
    expect(seen).toEqual([])
    // Checked side by side: said in whatever order the checks end.
    expect(dropped).toHaveLength(4)
    expect(dropped).toEqual(
      expect.arrayContaining([
        { type: 'peerRecordDropped', peer: B, from: 'pathfinding service', reason: `its user_id is the key of ${D}, not of ${B}` },
        { type: 'peerRecordDropped', peer: C, from: 'pathfinding service', reason: 'its signature does not check against the key of its user_id' },
        { type: 'peerRecordDropped', peer: C, from: 'pathfinding service', reason: expect.stringMatching(/not a string/) },
        // D's own, but 11 minutes old: where it says to dial may be long gone.
        {
          type: 'peerRecordDropped',
          peer: D,
          from: 'pathfinding service',
          reason: expect.stringMatching(/^it was announced 66\d s from our clock, beyond 600 s$/),
        },
      ]),
    )
    // address_metadata that is not an object at all: said once, nothing used.
    expect(await serviceRouteRecords(check, { paths: [[A, B, C]], given: ['garbage'], target: C })).toEqual({
      routeMetadata: [undefined],
      targetKey: undefined,
    })
    expect(dropped.at(-1)).toMatchObject({ peer: C, reason: 'not an object' })
  })

  test('a hop in the middle of one route and first of the next is taken all the same (our LockedTransfer may go to it)', async () => {
    const b = await recordOf(keys.B, Date.now() + 2_000)
    await serviceRouteRecords(check, {
      paths: [
        [A, D, B, C],
        [A, B, C],
      ],
      given: [{ [B]: b }, { [B]: b }],
      target: C,
    })
    expect(seen).toEqual([[B, publicKeyOf(keys.B)]])
  })

  test('property: whatever address_metadata a service answers, nothing throws and only records that are their node’s own are used', async () => {
    const nodes = { A, B, C, D }
    const keyOf = fc.constantFrom(...Object.values(nodes), ...Object.values(nodes).map((a) => a.toLowerCase()), '__proto__', 'x')
    const value = fc.oneof(
      fc.constantFrom(...Object.values(good)),
      fc.anything(),
      fc.record({ user_id: fc.oneof(fc.string(), fc.constantFrom(good.B.user_id)), displayname: fc.string(), capabilities: fc.string() }),
    )
    const given = fc.oneof(fc.anything(), fc.dictionary(keyOf, value, { maxKeys: 6 }))
    await fc.assert(
      fc.asyncProperty(fc.array(given, { minLength: 1, maxLength: 3 }), async (answered) => {
        const paths = answered.map(() => [A, B, D, C])
        const found = await serviceRouteRecords(check, { paths, given: answered, target: C })
        expect(found.routeMetadata).toHaveLength(answered.length)
        for (const records of found.routeMetadata)
          for (const [address, record] of Object.entries(records ?? {})) {
            const name = (Object.keys(nodes) as (keyof typeof nodes)[]).find((n) => nodes[n] === address)
            expect(name).toBeDefined()
            expect(record).toEqual(good[name!])
          }
        if (found.targetKey !== undefined) expect(found.targetKey).toBe(publicKeyOf(keys.C))
        // A peer seen is one whose own record was given.
        for (const [peer, key] of seen) expect(key).toBe(publicKeyOf(Object.values(keys).find((k) => privateKeyToAddress(k) === getAddress(peer))!))
      }),
      { numRuns: 150 },
    )
  })
})

describe('a transport that does not answer', () => {
  test('a payment waits at most 2 s for a record: then it is not used, and said', async () => {
    vi.useFakeTimers()
    try {
      const said: PeerRecordNotice[] = []
      const stuck = peerRecordsOf({ peerRecord: () => new Promise(() => {}) }, (notice) => said.push(notice))
      const answer = stuck(B, good.B, { take: true, from: 'pathfinding service' })
      await vi.advanceTimersByTimeAsync(2_000)
      expect(await answer).toEqual({ ok: false, reason: 'the transport failed to take it: no answer within 2000 ms' })
      expect(said).toMatchObject([{ peer: B, from: 'pathfinding service' }])
    } finally {
      vi.useRealTimers()
    }
  })
})

describe("a LockedTransfer's route metadata, at a mediator and at the target", () => {
  const transfer = (route: Address[], addressMetadata: unknown, target = C, initiator = D) =>
    ({ type: 'LockedTransfer', target, initiator, metadata: { routes: [{ route, address_metadata: addressMetadata }] } }) as unknown as LockedTransfer

  test("a mediator takes its next hop's record only; the target its initiator's unless the secret came with the transfer; a bad one is dropped and said", async () => {
    // Newer than those the transport took above: a record not newer than the one held is ignored.
    const later = Date.now() + 5_000
    const [b, c, d] = await Promise.all([recordOf(keys.B, later), recordOf(keys.C, later), recordOf(keys.D, later)])
    // We (A) mediate D > A > B > C: B is next.
    takeTransferRecords(check, transfer([D, A, B, C], { [D]: d, [B]: b, [C]: c }), A, { hasSecret: false })
    await vi.waitFor(() => expect(seen).toEqual([[B, publicKeyOf(keys.B)]]))
    // We (A) are the target of D > B > A. With the secret in the metadata, we never talk to D: nothing taken.
    seen.length = 0
    takeTransferRecords(check, transfer([D, B, A], { [B]: b, [D]: d }, A, D), A, { hasSecret: true })
    await sleep(100)
    expect(seen).toEqual([])
    // Without it, our SecretRequest goes to D.
    takeTransferRecords(check, transfer([D, B, A], { [B]: b, [D]: d }, A, D), A, { hasSecret: false })
    await vi.waitFor(() => expect(seen.map(([peer]) => peer)).toEqual([D]))
    // Another's record as the next hop's: dropped, said.
    seen.length = 0
    takeTransferRecords(check, transfer([D, A, B, C], { [B]: good.C }), A, { hasSecret: false })
    await vi.waitFor(() => expect(dropped).toMatchObject([{ peer: B, from: 'LockedTransfer' }]))
    expect(seen).toEqual([])
    // Garbage: nothing, no throw.
    for (const bad of [null, 'x', [], { [B]: 'x' }])
      expect(() => takeTransferRecords(check, transfer([D, A, B, C], bad), A, { hasSecret: false })).not.toThrow()
  })
})
