import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { nativeCurve } from '../../../support/curve.ts'
import type { HeardUpdate } from '../../../../src/pathfinding/heard.ts'
import { Gossip, type GossipLimits } from '../../../../src/node/runtime/gossip.ts'
import type { Message } from '../../../../src/protocol/messages/types.ts'
import type { NodeState } from '../../../../src/protocol/state/types.ts'
import { sleep } from '../../../../src/waits.ts'
import { AFTER, capacityUpdate, feeUpdate, twoWays, type TwoWays } from '../../pathfinding/support/heardNetwork.ts'

const FAST: Partial<GossipLimits> = { forwardEveryMs: 5, deferredEveryMs: 5 }

/** A's gossip over A's state, what it sends recorded by recipient name. */
function gossipOf(
  w: TwoWays,
  options: { routingMode?: 'local' | 'private'; limits?: Partial<GossipLimits>; state?: () => NodeState; now?: () => number } = {},
) {
  const sent: { to: string; message: Message }[] = []
  const name = (a: Address) => ['A', 'B', 'C', 'D', 'E', 'F'].find((n) => w.at(n).toLowerCase() === a.toLowerCase())!
  const refused: string[] = []
  const gossip = new Gossip({
    config: { routingMode: options.routingMode ?? 'local', secp256k1: nativeCurve },
    state: options.state ?? (() => w.net.node('A').state),
    delivery: { sendOnce: (to, message) => void sent.push({ to: name(to), message }) },
    limits: { ...FAST, ...options.limits },
    refused: (_, reason) => void refused.push(reason),
    now: options.now ?? (() => AFTER),
  })
  const to = (update: HeardUpdate) =>
    sent
      .filter(
        (s) =>
          JSON.stringify(s.message, (_, v) => (typeof v === 'bigint' ? v.toString() : v)) ===
          JSON.stringify(update, (_, v) => (typeof v === 'bigint' ? v.toString() : v)),
      )
      .map((s) => s.to)
      .sort()
  return { gossip, sent, to, refused }
}

/** A's partners B and C are new to it at its first batch, and get all it holds then: from here on, only what is passed on. */
async function partnersSynced(w: TwoWays, g: ReturnType<typeof gossipOf>) {
  g.gossip.own(capacityUpdate(w, 'A', 'B'))
  await sleep(30)
  g.sent.length = 0
}

describe('what a node passes on of the announcements it hears (docs/decisions/0074)', () => {
  test("A passes F's update of F-E on to its partners B and C, once, in a batch; the same again, an older one and a forged one go nowhere", async () => {
    const w = await twoWays()
    const g = gossipOf(w)
    await partnersSynced(w, g)
    const update = capacityUpdate(w, 'E', 'F', { updating_nonce: 2n, updating_capacity: 10n })
    expect(g.gossip.receive(update, w.at('C'))).toBe(true)
    await sleep(30)
    // Not back to C, which sent it: B only.
    expect(g.to(update)).toEqual(['B'])
    const before = g.sent.length
    expect(g.gossip.receive(update, w.at('B'))).toBe(false)
    expect(g.gossip.receive(capacityUpdate(w, 'E', 'F', { updating_nonce: 1n }), w.at('B'))).toBe(false)
    expect(g.gossip.receive(capacityUpdate(w, 'E', 'F', { updating_nonce: 3n, signer: 'D' }), w.at('B'))).toBe(false)
    await sleep(30)
    expect(g.sent.length).toBe(before)
    expect(g.refused).toEqual(['stale', 'bad_signature'])
    // A's own update of A-B, and E's.
    expect(g.gossip.view()).toMatchObject({ held: 2, accepted: 1, refused: 2 })
  })

  test('newer updates of one channel side within a batch: only the newest goes', async () => {
    const w = await twoWays()
    const g = gossipOf(w, { limits: { forwardEveryMs: 50 } })
    g.gossip.own(capacityUpdate(w, 'A', 'B'))
    await sleep(80)
    const updates = [1n, 2n, 3n].map((n) => capacityUpdate(w, 'D', 'E', { updating_nonce: n, updating_capacity: 100n * n }))
    for (const u of updates) expect(g.gossip.receive(u, w.at('C'))).toBe(true)
    await sleep(80)
    expect(updates.map((u) => g.to(u))).toEqual([[], [], ['B']])
  })

  test("our own update goes to every partner in its token network, the channel's partner too", async () => {
    const w = await twoWays()
    const g = gossipOf(w)
    await partnersSynced(w, g)
    const ours = capacityUpdate(w, 'A', 'B', { updating_nonce: 2n })
    g.gossip.own(ours)
    await sleep(30)
    expect(g.to(ours)).toEqual(['B', 'C'])
  })

  test('a peer over its rate is not heard: its announcements beyond the bucket are dropped unread', async () => {
    const w = await twoWays()
    const g = gossipOf(w, { limits: { perPeerBurst: 3, perPeerPerSecond: 0.001 } })
    const taken = [1n, 2n, 3n, 4n, 5n].map((n) => g.gossip.receive(capacityUpdate(w, 'D', 'E', { updating_nonce: n }), w.at('C')))
    expect(taken).toEqual([true, true, true, false, false])
    expect(g.refused).toEqual(['rate_limited', 'rate_limited'])
    // Another peer has its own bucket.
    expect(g.gossip.receive(capacityUpdate(w, 'D', 'E', { updating_nonce: 6n }), w.at('B'))).toBe(true)
  })

  test('a private node hears and holds, and sends nothing: neither its own nor what it hears', async () => {
    const w = await twoWays()
    const g = gossipOf(w, { routingMode: 'private' })
    g.gossip.own(capacityUpdate(w, 'A', 'B'))
    expect(g.gossip.receive(capacityUpdate(w, 'E', 'F'), w.at('C'))).toBe(true)
    g.gossip.peerSeen(w.at('B'))
    await sleep(30)
    expect(g.sent).toEqual([])
    expect(g.gossip.view()).toMatchObject({ held: 2, accepted: 1, sent: 0 })
  })

  test("an update of a channel A's graph does not hold yet is held, and taken and passed on once the graph has it", async () => {
    const w = await twoWays()
    const full = w.net.node('A').state
    const tokenNetwork = w.net.chain.tokenNetwork
    const { [w.ids.EF!.toString()]: _, ...graph } = full.tokenNetworks[tokenNetwork]!.graph
    let state: NodeState = { ...full, tokenNetworks: { ...full.tokenNetworks, [tokenNetwork]: { ...full.tokenNetworks[tokenNetwork]!, graph } } }
    const g = gossipOf(w, { state: () => state })
    await partnersSynced(w, g)
    const update = capacityUpdate(w, 'E', 'F', { updating_nonce: 2n })
    expect(g.gossip.receive(update, w.at('C'))).toBe(false)
    await sleep(30)
    expect(g.gossip.view()).toMatchObject({ held: 1, accepted: 0 })
    expect(g.refused).toEqual([])
    state = full
    await sleep(40)
    expect(g.gossip.view()).toMatchObject({ held: 2, accepted: 1 })
    expect(g.to(update)).toEqual(['B'])
  })

  test('a partner that announces its fees on its channel with A anew, itself (as at each of its starts), is sent all A holds, at most once a minute', async () => {
    const w = await twoWays()
    let now = AFTER
    const g = gossipOf(w, { limits: { forwardEveryMs: 10_000 }, now: () => now })
    const ef = capacityUpdate(w, 'E', 'F')
    g.gossip.receive(ef, w.at('C'))
    // Passed on by C, B's fees are no news of B's: nothing sent.
    g.gossip.receive(feeUpdate(w, 'B', 'F', 0n, 1), w.at('C'))
    expect(g.to(ef)).toEqual([])
    g.gossip.receive(feeUpdate(w, 'B', 'A', 0n, 1), w.at('B'))
    expect(g.to(ef)).toEqual(['B'])
    g.gossip.receive(feeUpdate(w, 'B', 'A', 0n, 2), w.at('B'))
    expect(g.to(ef)).toEqual(['B'])
    now += 61_000
    g.gossip.receive(feeUpdate(w, 'B', 'A', 0n, 3), w.at('B'))
    expect(g.to(ef)).toEqual(['B', 'B'])
    g.gossip.stop()
  })

  test('a partner seen is sent what A holds of their token network, not its own, at most once in a while', async () => {
    const w = await twoWays()
    const g = gossipOf(w, { limits: { forwardEveryMs: 10_000 } })
    const [ef, fromB] = [capacityUpdate(w, 'E', 'F'), capacityUpdate(w, 'B', 'F')]
    g.gossip.receive(ef, w.at('C'))
    g.gossip.receive(fromB, w.at('B'))
    g.gossip.peerSeen(w.at('B'))
    g.gossip.peerSeen(w.at('B'))
    // D is no partner of A's.
    g.gossip.peerSeen(w.at('D'))
    expect(g.sent.map((s) => s.to)).toEqual(['B'])
    expect(g.to(ef)).toEqual(['B'])
    g.gossip.stop()
  })
})
