import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { directionCapacity } from '../../../src/pathfinding/channel.ts'
import { applyChainEvent } from '../../../src/pathfinding/network.ts'
import { checkUpdate, readUpdate, type UpdateOutcome } from '../../../src/pathfinding/updates.ts'
import type { FeeSchedule, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../../../src/protocol/messages/types.ts'
import { encodeMessage } from '../../../src/protocol/messages/wire.ts'
import {
  pythonTimestamp,
  signCapacityUpdate,
  signFeeUpdate,
  TEST_CHAIN_ID,
  TEST_NOW,
  TestNetwork,
  testNodes,
  type TestNode,
} from '../../support/pathfinding.ts'
import { nativeCurve } from '../../support/curve.ts'

// Signed and checked with the native secp256k1 binding, as the service will run headless.

const [a, b, c] = testNodes(3, 7) as [TestNode, TestNode, TestNode]

/** A channel a-b where each can send 100, announced by both (nonces 0), and a channel b-c. */
function setup() {
  const net = new TestNetwork()
  const ab = net.fund(a, b, 100n, 100n)
  const bc = net.fund(b, c, 100n, 100n)
  return { net, ab, bc }
}

type CapacityFields = Omit<PFSCapacityUpdate, 'type'>
function capacityFields(net: TestNetwork, channelId: bigint, change: Partial<CapacityFields> = {}): CapacityFields {
  return {
    canonical_identifier: net.at(channelId),
    updating_participant: a.address,
    other_participant: b.address,
    updating_nonce: 1n,
    other_nonce: 0n,
    updating_capacity: 90n,
    other_capacity: 110n,
    reveal_timeout: 50n,
    ...change,
  }
}

const schedule: FeeSchedule = { cap_fees: true, flat: 5n, proportional: 1_000n, imbalance_penalty: null }
function feeFields(net: TestNetwork, channelId: bigint, change: Partial<Omit<PFSFeeUpdate, 'type'>> = {}): Omit<PFSFeeUpdate, 'type'> {
  return {
    canonical_identifier: net.at(channelId),
    updating_participant: a.address,
    fee_schedule: schedule,
    timestamp: pythonTimestamp(TEST_NOW - 1000),
    ...change,
  }
}

const refused = (reason: string) => expect.objectContaining({ outcome: 'refused', reason })

describe('capacity updates', () => {
  test("a participant's newer update is taken, and the same update again is only a resend", () => {
    const { net, ab } = setup()
    const update = signCapacityUpdate(a.key, capacityFields(net, ab))
    expect(net.apply(update).outcome).toBe('accepted')
    expect(net.channel(ab).participants[0].capacityUpdate).toEqual(update)
    expect(net.apply(structuredClone(update))).toEqual({ outcome: 'resent' })
  })

  test('a forged signature is refused: signed by another node, or by no key at all', () => {
    const { net, ab } = setup()
    const before = net.channel(ab)
    // c signs an update that says it is a's: it would give a's direction whatever c likes.
    expect(net.apply(signCapacityUpdate(c.key, capacityFields(net, ab, { updating_capacity: 0n })))).toEqual(refused('bad_signature'))
    const genuine = signCapacityUpdate(a.key, capacityFields(net, ab))
    expect(net.apply({ ...genuine, updating_capacity: 100n })).toEqual(refused('bad_signature'))
    expect(net.apply({ ...genuine, signature: `0x${'00'.repeat(65)}` })).toEqual({ outcome: 'refused', reason: 'bad_signature', detail: 'recovers no key' })
    expect(net.channel(ab)).toBe(before)
  })

  test('an update for a channel it does not name is refused: unknown, closed, of other participants, with the wrong partner', () => {
    const { net, ab, bc } = setup()
    expect(net.apply(signCapacityUpdate(a.key, capacityFields(net, 99n)))).toEqual(refused('unknown_channel'))
    // a is no participant of b-c.
    expect(net.apply(signCapacityUpdate(a.key, capacityFields(net, bc)))).toEqual(refused('not_a_participant'))
    expect(net.apply(signCapacityUpdate(a.key, capacityFields(net, ab, { other_participant: c.address })))).toEqual(refused('wrong_partner'))
    expect(net.apply(signCapacityUpdate(a.key, capacityFields(net, ab, { other_participant: a.address })))).toEqual(refused('wrong_partner'))
    expect(
      net.apply(signCapacityUpdate(a.key, capacityFields(net, ab, { canonical_identifier: { ...net.at(ab), chain_identifier: TEST_CHAIN_ID + 1n } }))),
    ).toEqual(refused('wrong_chain'))
    expect(
      net.apply(
        signCapacityUpdate(
          a.key,
          capacityFields(net, ab, { canonical_identifier: { ...net.at(ab), token_network_address: '0x2222222222222222222222222222222222222222' } }),
        ),
      ),
    ).toEqual(refused('unknown_token_network'))
    applyChainEvent(net.state, {
      type: 'channelClosed',
      tokenNetwork: net.tokenNetwork,
      channelId: ab,
      closer: b.address,
      nonce: 0n,
      balanceHash: '0x00',
      blockNumber: 5n,
    })
    expect(net.apply(signCapacityUpdate(a.key, capacityFields(net, ab)))).toEqual(refused('channel_not_open'))
  })

  test('a replayed older update is refused, whichever of its nonces is older', () => {
    const { net, ab } = setup()
    const older = signCapacityUpdate(a.key, capacityFields(net, ab, { updating_nonce: 3n, other_nonce: 2n, updating_capacity: 100n, other_capacity: 100n }))
    const newer = signCapacityUpdate(a.key, capacityFields(net, ab, { updating_nonce: 4n, other_nonce: 2n, updating_capacity: 60n, other_capacity: 140n }))
    expect(net.apply(older).outcome).toBe('accepted')
    expect(net.apply(newer).outcome).toBe('accepted')
    expect(net.apply(older)).toEqual(refused('stale'))
    // The partner's nonce went back, ours forward: not a view a node can have had after the one held.
    expect(net.apply(signCapacityUpdate(a.key, capacityFields(net, ab, { updating_nonce: 5n, other_nonce: 1n })))).toEqual(refused('stale'))
    expect(net.channel(ab).participants[0].capacityUpdate).toEqual(newer)
  })

  test('with the same nonces only a deposit can have changed the capacities: higher ones are taken, lower ones refused', () => {
    const { net, ab } = setup()
    const held = signCapacityUpdate(a.key, capacityFields(net, ab, { updating_nonce: 2n, other_nonce: 2n, updating_capacity: 100n, other_capacity: 100n }))
    expect(net.apply(held).outcome).toBe('accepted')
    const deposited = signCapacityUpdate(a.key, capacityFields(net, ab, { updating_nonce: 2n, other_nonce: 2n, updating_capacity: 150n, other_capacity: 100n }))
    expect(net.apply(deposited).outcome).toBe('accepted')
    // The update from before the deposit, replayed: same nonces, less capacity.
    expect(net.apply(held)).toEqual(refused('stale'))
  })

  test('amounts beyond uint256 and nonces beyond uint64 are refused (a message built in-process is not parsed)', () => {
    const { net, ab } = setup()
    // Such numbers cannot even be packed to be signed: a signature of other numbers comes with them.
    const signed = signCapacityUpdate(a.key, capacityFields(net, ab))
    expect(net.apply({ ...signed, updating_capacity: 1n << 256n })).toEqual(refused('out_of_range'))
    expect(net.apply({ ...signed, updating_nonce: 1n << 64n })).toEqual(refused('out_of_range'))
    expect(net.apply({ ...signed, reveal_timeout: 1n << 256n })).toEqual(refused('out_of_range'))
  })

  test('from a wire line: a good one is read and taken, a malformed one or another message is refused', () => {
    const { net, ab } = setup()
    const line = encodeMessage(signCapacityUpdate(a.key, capacityFields(net, ab)))
    const read = readUpdate(line)
    expect(read.ok).toBe(true)
    if (read.ok) expect(net.apply(read.update).outcome).toBe('accepted')
    expect(readUpdate(line.replace('"updating_nonce":"1"', '"updating_nonce":"-1"'))).toMatchObject({ ok: false, reason: 'malformed' })
    expect(readUpdate('{')).toMatchObject({ ok: false, reason: 'malformed' })
    expect(readUpdate(JSON.stringify({ type: 'Processed', message_identifier: '1', signature: `0x${'11'.repeat(65)}` }))).toEqual({
      ok: false,
      reason: 'not_an_update',
      detail: 'Processed',
    })
  })
})

describe('fee updates', () => {
  test("a participant's schedule is taken and kept for its side of the channel", () => {
    const { net, ab } = setup()
    const update = signFeeUpdate(a.key, feeFields(net, ab))
    expect(net.apply(update).outcome).toBe('accepted')
    expect(net.channel(ab).participants[0].feeUpdate).toEqual(update)
    expect(net.channel(ab).participants[1].feeUpdate).toBeUndefined()
    expect(net.apply(update)).toEqual({ outcome: 'resent' })
  })

  test('a timestamp further in the future than an hour is refused; within the hour it is taken', () => {
    const { net, ab } = setup()
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, ab, { timestamp: pythonTimestamp(TEST_NOW + 3_600_001) })))).toEqual(refused('future_timestamp'))
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, ab, { timestamp: pythonTimestamp(TEST_NOW + 3_599_000) }))).outcome).toBe('accepted')
    const strict = checkUpdate(net.state, signFeeUpdate(a.key, feeFields(net, ab, { timestamp: pythonTimestamp(TEST_NOW + 3_599_500) })), {
      now: TEST_NOW,
      curve: nativeCurve,
      maxClockAheadMs: 60_000,
    })
    expect(strict).toEqual(refused('future_timestamp'))
  })

  test('an update not newer than the one held is refused, the same instant written otherwise too; a date that does not exist is refused', () => {
    const { net, ab } = setup()
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, ab, { timestamp: '2025-12-31T23:00:00.500000' }))).outcome).toBe('accepted')
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, ab, { timestamp: '2025-12-31T22:59:59' })))).toEqual(refused('stale'))
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, ab, { timestamp: '2025-12-31T23:00:00.5', fee_schedule: { ...schedule, flat: 1n } })))).toEqual(
      refused('stale'),
    )
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, ab, { timestamp: '2025-02-30T23:00:00' })))).toEqual(refused('bad_timestamp'))
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, ab, { timestamp: '2025-12-31T23:00:00.500001' }))).outcome).toBe('accepted')
  })

  test('a forged one, or one for a channel of others, is refused', () => {
    const { net, ab, bc } = setup()
    expect(net.apply(signFeeUpdate(c.key, feeFields(net, ab)))).toEqual(refused('bad_signature'))
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, bc)))).toEqual(refused('not_a_participant'))
    expect(net.apply(signFeeUpdate(a.key, feeFields(net, 42n)))).toEqual(refused('unknown_channel'))
  })

  test('an imbalance penalty must be a curve: 2 to 100 points, x strictly increasing, within uint256', () => {
    const { net, ab } = setup()
    const withPenalty = (imbalance_penalty: [bigint, bigint][]) =>
      net.apply(signFeeUpdate(a.key, feeFields(net, ab, { fee_schedule: { ...schedule, imbalance_penalty } })))
    expect(withPenalty([[0n, 10n]])).toEqual(refused('bad_imbalance_penalty'))
    expect(
      withPenalty([
        [0n, 10n],
        [5n, 0n],
        [5n, 10n],
      ]),
    ).toEqual(refused('bad_imbalance_penalty'))
    expect(withPenalty(Array.from({ length: 101 }, (_, i) => [BigInt(i), 0n]))).toEqual(refused('bad_imbalance_penalty'))
    const signed = signFeeUpdate(a.key, feeFields(net, ab))
    const penalty: [bigint, bigint][] = [
      [0n, 1n << 256n],
      [1n, 0n],
    ]
    expect(net.apply({ ...signed, fee_schedule: { ...schedule, imbalance_penalty: penalty } })).toEqual(refused('out_of_range'))
    expect(net.apply({ ...signed, fee_schedule: { ...schedule, flat: 1n << 256n } })).toEqual(refused('out_of_range'))
    expect(
      withPenalty([
        [0n, 10n],
        [100n, 0n],
        [200n, 10n],
      ]).outcome,
    ).toBe('accepted')
  })
})

/**
 * Whatever a participant sends (its own updates, in any order, with any numbers, and updates it signs in its
 * partner's name), the service never lets a direction carry more than the partner said: the partner's word caps
 * both directions, as raiden-services' min rule means it to.
 */
test('property: no sequence of updates from one participant lifts a direction above what the other participant claimed', () => {
  const amount = fc.bigInt({ min: 0n, max: 1_000n })
  const nonce = fc.bigInt({ min: 0n, max: 5n })
  const fromA = fc.record({
    inNameOf: fc.constantFrom('a', 'b'),
    updating_nonce: nonce,
    other_nonce: nonce,
    updating_capacity: amount,
    other_capacity: amount,
    reveal_timeout: fc.bigInt({ min: 1n, max: 100n }),
  })
  fc.assert(
    fc.property(amount, amount, fc.array(fromA, { maxLength: 12 }), fc.boolean(), (bOwn, bSaysOfA, sent, bSpeaks) => {
      const net = new TestNetwork()
      const id = net.open(a, b)
      net.deposit(id, a, 2_000n)
      net.deposit(id, b, 2_000n)
      if (bSpeaks) {
        const claim = signCapacityUpdate(b.key, {
          canonical_identifier: net.at(id),
          updating_participant: b.address,
          other_participant: a.address,
          updating_nonce: 3n,
          other_nonce: 3n,
          updating_capacity: bOwn,
          other_capacity: bSaysOfA,
          reveal_timeout: 50n,
        })
        expect(net.apply(claim).outcome).toBe('accepted')
      }
      const bClaim = net.channel(id).participants[1].capacityUpdate
      for (const s of sent) {
        const [me, partner] = s.inNameOf === 'a' ? [a, b] : [b, a]
        const { inNameOf: _, ...fields } = s
        const outcome: UpdateOutcome = net.apply(
          signCapacityUpdate(a.key, { canonical_identifier: net.at(id), updating_participant: me.address, other_participant: partner.address, ...fields }),
        )
        if (s.inNameOf === 'b') expect(outcome.outcome).not.toBe('accepted')
        const channel = net.channel(id)
        // b's own claims are untouched, and they cap both directions (0 while b has said nothing).
        expect(channel.participants[1].capacityUpdate).toEqual(bClaim)
        expect(directionCapacity(channel, 0) <= (bClaim?.other_capacity ?? 0n)).toBe(true)
        expect(directionCapacity(channel, 1) <= (bClaim?.updating_capacity ?? 0n)).toBe(true)
      }
    }),
    { numRuns: 60 },
  )
})

test('the refusals come with no change: a refused update leaves the channel record as it was', () => {
  const { net, ab } = setup()
  const before = net.channel(ab)
  const attempts: Signed<PFSCapacityUpdate>[] = [
    signCapacityUpdate(c.key, capacityFields(net, ab)),
    signCapacityUpdate(a.key, capacityFields(net, ab, { updating_nonce: 0n, other_nonce: 0n, updating_capacity: 1n })),
  ]
  for (const update of attempts) expect(net.apply(update).outcome).toBe('refused')
  expect(net.channel(ab)).toBe(before)
})
