import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getAddress } from 'viem'
import { afterAll, describe, expect, test } from 'vitest'
import { putChannel } from '../../../../src/pathfinding/network.ts'
import { defaultIntakeLimits, UpdateIntake } from '../../../../src/pathfinding/service/intake.ts'
import { PfsStore } from '../../../../src/pathfinding/service/store.ts'
import type { Delivered } from '../../../../src/protocol/messages/types.ts'
import { encodeMessage } from '../../../../src/protocol/messages/wire.ts'
import { pfsUpdateAckId } from '../../../../src/protocol/pfsUpdateAck.ts'
import { signCapacityUpdate, TEST_CHAIN_ID, TestNetwork, testNodes, type TestNode } from '../../../support/pathfinding.ts'
import { nativeCurve } from '../../../support/curve.ts'

// The intake on a real store, with the view following the store as the service wires it (service.ts).
const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))
const [a, b] = testNodes(2, 11) as [TestNode, TestNode]

async function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-pfs-intake-'))
  dirs.push(dir)
  const net = new TestNetwork()
  const channelId = net.open(a, b)
  net.deposit(channelId, a, 100n)
  net.deposit(channelId, b, 100n)
  const store = await PfsStore.open(dir, {
    chainId: Number(TEST_CHAIN_ID),
    registry: getAddress('0x0000000000000000000000000000000000000001'),
    address: b.address,
  })
  store.onCommitted((committed) => {
    for (const [key, value] of committed) if (key.startsWith('c!') && value) putChannel(net.view, value as never)
  })
  await store.transact((tx) => tx.putChannel(net.channel(channelId)))
  const acks: { to: string; delivered: Delivered }[] = []
  const intake = new UpdateIntake({
    curve: nativeCurve,
    store,
    state: net.state,
    limits: { ...defaultIntakeLimits, perPeerBurst: 5, perPeerPerSecond: 0.001 },
    acknowledge: (to, delivered) => acks.push({ to, delivered }),
  })
  const update = (nonce: bigint, capacity: bigint) =>
    signCapacityUpdate(a.key, {
      canonical_identifier: net.at(channelId),
      updating_participant: a.address,
      other_participant: b.address,
      updating_nonce: nonce,
      other_nonce: 0n,
      updating_capacity: capacity,
      other_capacity: 100n,
      reveal_timeout: 50n,
    })
  return { net, channelId, store, intake, acks, update }
}

describe('the intake of updates', () => {
  test('two updates of one participant at once: both pass the check against the view, the store step keeps the newer', async () => {
    const { store, intake, acks, update, channelId, net } = await setup()
    const [newer, older] = [update(2n, 80n), update(1n, 90n)]
    const outcomes = await Promise.all([intake.handle(encodeMessage(newer), a.address), intake.handle(encodeMessage(older), a.address)])
    expect(outcomes).toEqual([{ outcome: 'accepted', update: newer }, expect.objectContaining({ outcome: 'refused', reason: 'stale' })])
    expect(store.channels().find((c) => c.channelId === channelId)?.participants[0].capacityUpdate).toEqual(newer)
    expect(net.channel(channelId).participants[0].capacityUpdate).toEqual(newer)
    expect(acks.map((x) => x.delivered.delivered_message_identifier)).toEqual([pfsUpdateAckId(newer)])
    await store.close()
  })

  test('a chain event written between the check and the store step is kept: the update goes into the channel as it is then', async () => {
    const { store, intake, update, channelId, net } = await setup()
    // Queued before the update's step (a deposit the chain watch applies): the view does not show it yet.
    const deposit = store.transact((tx) => {
      const channel = tx.channel(net.tokenNetwork, channelId)!
      tx.putChannel({ ...channel, participants: [{ ...channel.participants[0], deposit: 150n }, channel.participants[1]] })
    })
    const outcome = await intake.handle(encodeMessage(update(1n, 150n)), a.address)
    await deposit
    expect(outcome.outcome).toBe('accepted')
    const stored = store.channels().find((c) => c.channelId === channelId)!
    expect(stored.participants[0]).toMatchObject({ deposit: 150n, capacityUpdate: { updating_capacity: 150n } })
    await store.close()
  })

  test('a node speaks for itself only, within its own limits; whatever a line holds, it ends as one counted outcome', async () => {
    const { store, intake, update } = await setup()
    expect(await intake.handle(encodeMessage(update(1n, 90n)), b.address)).toMatchObject({ outcome: 'refused', reason: 'not_updater' })
    expect(await intake.handle('not json', a.address)).toMatchObject({ outcome: 'refused', reason: 'malformed' })
    expect(await intake.handle('x'.repeat(defaultIntakeLimits.maxLineLength + 1), a.address)).toMatchObject({ outcome: 'refused', reason: 'too_large' })
    // a's bucket of 5: one spent above (b's line was b's, the oversized one refused before the bucket), four more and it is empty.
    for (let i = 0; i < 4; i++) await intake.handle('{}', a.address)
    expect(await intake.handle(encodeMessage(update(1n, 90n)), a.address)).toMatchObject({ outcome: 'refused', reason: 'rate_limited' })
    expect(intake.counters()).toEqual({ accepted: 0, resent: 0, deferred: 0, refused: { not_updater: 1, malformed: 5, too_large: 1, rate_limited: 1 } })
    await store.close()
  })
})
