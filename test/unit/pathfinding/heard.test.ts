import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { forgetClosed, hear, heardChannelKey, heardCount, type Heard } from '../../../src/pathfinding/heard.ts'
import { packMessage } from '../../../src/protocol/messages/pack.ts'
import { encodeMessage } from '../../../src/protocol/messages/wire.ts'
import { signPackedSync } from '../../../src/protocol/signature.ts'
import { AFTER, capacityUpdate, feeUpdate, twoWays, type TwoWays } from './support/heardNetwork.ts'
import { nativeCurve } from '../../support/curve.ts'

const held = (w: TwoWays, heard: Heard, who: string, partner: string) =>
  heard.get(heardChannelKey(w.net.chain.tokenNetwork, w.ids[who + partner]!))?.get(w.at(who).toLowerCase())

describe('what a node takes of the announcements it hears (docs/decisions/0074)', () => {
  test("a valid update is held; the same again is a resend; one no newer, forged, of another chain or of a channel not in the node's graph is refused", async () => {
    const w = await twoWays()
    const state = w.net.node('A').state
    const heard: Heard = new Map()
    const context = { now: AFTER, curve: nativeCurve }
    const first = capacityUpdate(w, 'B', 'F', { updating_nonce: 3n, updating_capacity: 0n })
    expect(hear(heard, state, first, context).outcome).toBe('accepted')
    expect(held(w, heard, 'B', 'F')?.capacityUpdate).toEqual(first)
    expect(hear(heard, state, first, context).outcome).toBe('resent')
    const refusal = (update: Parameters<typeof hear>[2]) => {
      const outcome = hear(heard, state, update, context)
      return outcome.outcome === 'refused' ? outcome.reason : outcome.outcome
    }
    expect(refusal(capacityUpdate(w, 'B', 'F', { updating_nonce: 2n, updating_capacity: 1000n }))).toBe('stale')
    expect(refusal(capacityUpdate(w, 'B', 'F', { updating_nonce: 4n, signer: 'C' }))).toBe('bad_signature')
    expect(refusal(capacityUpdate(w, 'B', 'F', { updating_nonce: 4n, chainId: 999n }))).toBe('wrong_chain')
    expect(refusal(capacityUpdate(w, 'B', 'F', { updating_nonce: 4n, other_participant: w.at('D') }))).toBe('wrong_partner')
    expect(held(w, heard, 'B', 'F')?.capacityUpdate).toEqual(first)
    // Fees: a later stamp is newer; one stamped an hour past the node's clock is refused.
    expect(hear(heard, state, feeUpdate(w, 'C', 'D', 5n, 1), context).outcome).toBe('accepted')
    expect(refusal(feeUpdate(w, 'C', 'D', 9n, 1))).toBe('stale')
    expect(hear(heard, state, feeUpdate(w, 'C', 'D', 9n, 2), { now: Date.UTC(2026, 10, 29, 10), curve: nativeCurve }).outcome).toBe('refused')
    expect(heardCount(heard)).toBe(2)
  })

  test("an update of a channel the node's graph does not hold is refused as unknown; a closed channel's are forgotten", async () => {
    const w = await twoWays()
    const heard: Heard = new Map()
    const update = capacityUpdate(w, 'B', 'F')
    const unknownId = { ...update.canonical_identifier, channel_identifier: 99n }
    const { signature: _, ...unsigned } = update
    const other = { ...unsigned, canonical_identifier: unknownId }
    const signed = { ...other, signature: signPackedSync(nativeCurve, w.key('B'), packMessage(other)) }
    expect(hear(heard, w.net.node('A').state, signed, { now: AFTER, curve: nativeCurve })).toMatchObject({ outcome: 'refused', reason: 'unknown_channel' })
    expect(hear(heard, w.net.node('A').state, update, { now: AFTER, curve: nativeCurve }).outcome).toBe('accepted')
    const graph = w.net.node('A').state.tokenNetworks[w.net.chain.tokenNetwork]!.graph
    const closed = {
      ...w.net.node('A').state,
      tokenNetworks: {
        [w.net.chain.tokenNetwork]: {
          ...w.net.node('A').state.tokenNetworks[w.net.chain.tokenNetwork]!,
          graph: { ...graph, [w.ids.BF!.toString()]: { ...graph[w.ids.BF!.toString()]!, open: false } },
        },
      },
    }
    expect(hear(heard, closed, capacityUpdate(w, 'B', 'F', { updating_nonce: 2n }), { now: AFTER, curve: nativeCurve })).toMatchObject({
      outcome: 'refused',
      reason: 'channel_not_open',
    })
    forgetClosed(heard, closed)
    expect(heardCount(heard)).toBe(0)
  })

  test('property: whatever arrives, in whatever order, only updates signed by their participant and newer than the one held are ever held', async () => {
    const w = await twoWays()
    const state = w.net.node('A').state
    const pairs = [
      ['B', 'F'],
      ['F', 'B'],
      ['C', 'D'],
    ] as const
    const updates = fc.record({
      pair: fc.constantFrom(...pairs),
      nonce: fc.bigInt({ min: 0n, max: 6n }),
      capacity: fc.bigInt({ min: 0n, max: 2000n }),
      forged: fc.boolean(),
    })
    fc.assert(
      fc.property(fc.array(updates, { maxLength: 25 }), (arrivals) => {
        const heard: Heard = new Map()
        for (const a of arrivals) {
          const [who, partner] = a.pair
          const update = capacityUpdate(w, who, partner, { updating_nonce: a.nonce, updating_capacity: a.capacity, ...(a.forged ? { signer: 'A' } : {}) })
          const before = held(w, heard, who, partner)?.capacityUpdate
          const outcome = hear(heard, state, update, { now: AFTER, curve: nativeCurve }).outcome
          const after = held(w, heard, who, partner)?.capacityUpdate
          if (a.forged) expect(outcome).toBe('refused')
          if (outcome === 'accepted') {
            expect(after).toEqual(update)
            // Newer: a higher nonce, or the same nonce and no capacity lower.
            if (before) expect(a.nonce > before.updating_nonce || (a.nonce === before.updating_nonce && a.capacity >= before.updating_capacity)).toBe(true)
          } else expect(after && encodeMessage(after)).toBe(before && encodeMessage(before))
        }
      }),
      { numRuns: 60 },
    )
  })
})
