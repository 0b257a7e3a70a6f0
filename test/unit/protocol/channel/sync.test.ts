// A node restored from a copy (docs/decisions/0034): its channels wait for their partner's ChannelSync before anything
// is signed under their nonce, adopt what the answer proves newer, and so never sign two different messages under one
// nonce, from whatever point of a run the copy was taken.
import fc from 'fast-check'
import { bytesToHex, type Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import { takesNonce } from '../../../../src/protocol/channel/usedNonce.ts'
import { encodeMessage, packMessage, packSyncProof, signMessage } from '../../../../src/protocol/messages/index.ts'
import { signPackedSync } from '../../../../src/protocol/signature.ts'
import type { ChannelSync, Signed, SyncBalanceProof } from '../../../../src/protocol/messages/types.ts'
import { defaultContext } from '../../../../src/protocol/state/access.ts'
import type { Channel, NodeState } from '../../../../src/protocol/state/types.ts'
import { transition } from '../../../../src/protocol/transition.ts'
import { Network } from '../support/network.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

type Op = { kind: 'pay'; flow: number; amount: bigint } | { kind: 'deliver'; pick: number } | { kind: 'mine'; blocks: number } | { kind: 'withdraw' }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('pay' as const), flow: fc.nat(3), amount: fc.bigInt({ min: 1n, max: 40n }) }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('deliver' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('mine' as const), blocks: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'withdraw' as const }) },
)

/** A and C pay each other through B, and A and B pay each other; A withdraws now and then. */
async function network(): Promise<Network> {
  const net = new Network(['A', 'B', 'C'])
  await net.open('A', 'B', 500n, 500n)
  await net.open('B', 'C', 500n, 500n)
  return net
}

let paymentId = 0n
async function run(net: Network, ops: Op[]): Promise<void> {
  const flows = [
    ['A', 'B', [['B']]],
    ['B', 'A', [['A']]],
    ['A', 'C', [['B', 'C']]],
    ['C', 'A', [['B', 'A']]],
  ] as const
  for (const o of ops) {
    if (o.kind === 'pay') {
      const [from, to, routes] = flows[o.flow]!
      await net.pay(
        from,
        to,
        o.amount,
        ++paymentId,
        routes.map((r) => [...r]),
      )
    } else if (o.kind === 'deliver') await net.deliver(o.pick)
    else if (o.kind === 'mine') await net.mine(o.blocks)
    else {
      const channel = channelAB(net.node('A').state)
      await net.dispatch('A', { type: 'withdraw', tokenNetwork: channel.tokenNetwork, channelId: channel.id, totalWithdraw: channel.our.withdrawn + 1n })
    }
  }
}

const channelAB = (state: NodeState): Channel => Object.values(state.channels).find((c) => c.partner.toLowerCase() !== state.address.toLowerCase())!

/** Every nonce message each node signed, by channel and nonce: the signed bytes of each (more than one is the violation). */
function signedUnderNonce(net: Network, name: string): Map<string, Set<string>> {
  const seen = new Map<string, Set<string>>()
  for (const { message } of net.node(name).sent) {
    if (!takesNonce(message)) continue
    const key = `${message.channel_identifier}:${message.nonce}`
    const set = seen.get(key) ?? new Set()
    set.add(bytesToHex(packMessage(message)))
    seen.set(key, set)
  }
  return seen
}

/**
 * The wipe: A's process is gone. Its messages already on the wire arrive or are lost, in order per peer (a stream
 * that breaks loses what follows); a lost one signed after the copy never existed outside A (nobody holds it, so
 * signing its nonce again contradicts nothing). Those the copy holds in its outbox stay on their way (the restored node
 * resends them, the same bytes). Then A runs the copy.
 */
async function wipeAndRestore(net: Network, copy: NodeState, signedAtCopy: number, arrives: number[]): Promise<void> {
  const a = net.node('A')
  const copied = new Set(a.sent.slice(0, signedAtCopy).map((s) => encodeMessage(s.message)))
  for (const [i, peer] of ['B', 'C'].entries()) {
    const onTheWire = net.inFlight.filter((f) => f.from === 'A' && f.to === peer && !copied.has(f.text))
    for (const m of onTheWire.slice(arrives[i % arrives.length]!)) {
      net.inFlight.splice(net.inFlight.indexOf(m), 1)
      a.sent.splice(
        a.sent.findIndex((s) => encodeMessage(s.message) === m.text),
        1,
      )
    }
  }
  // What is still on its way from A arrives before anything the restored A sends.
  for (const m of net.inFlight.filter((f) => f.from === 'A')) await net.deliverMessage('A', m.to, JSON.parse(m.text).type)
  a.state = structuredClone(copy)
  await net.dispatch('A', { type: 'restored', version: 1n })
  expect(Object.values(a.state.channels).every((c) => c.waitingSync)).toBe(true)
  // The restored node's sync goes on from the copy's block (the restore stores it as the synced block): what was
  // mined meanwhile (a secret the partner registered, a withdraw) reaches it before its channels are synced.
  await net.catchUpFrom('A', copy.blockNumber)
  await net.dispatch('A', { type: 'requestChannelSyncs' })
}

describe('a node restored from a copy', () => {
  test('synced with an honest partner, it never signs two different messages under one nonce, from a copy taken at any point of a random run', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { maxLength: 30 }),
        fc.array(op, { maxLength: 30 }),
        fc.array(fc.nat(6), { minLength: 2, maxLength: 2 }),
        fc.array(op, { maxLength: 30 }),
        async (beforeCopy, afterCopy, arrives, afterRestore) => {
          const net = await network()
          await run(net, beforeCopy)
          const copy = structuredClone(net.node('A').state)
          const signedAtCopy = net.node('A').sent.length
          await run(net, afterCopy)
          await wipeAndRestore(net, copy, signedAtCopy, arrives)
          await run(net, afterRestore)
          await net.deliverAll()
          await net.mine(3)
          await net.deliverAll()

          for (const name of ['A', 'B', 'C']) {
            for (const [key, contents] of signedUnderNonce(net, name)) expect(contents.size, `${name} signed ${contents.size} messages under ${key}`).toBe(1)
          }
          // (Network.violations also counts the messages lost with the wipe, which nobody holds: the check above does not.)
          // The partner answered: A's channel is synced, and its ends are the partner's (nothing is left in flight),
          // unless a withdraw was under way: the copy may have forgotten one of ours that the partner still counts, and
          // then the partner refuses our next request for the same total (a nonce gap, never a nonce used twice).
          const a = channelAB(net.node('A').state)
          const b = Object.values(net.node('B').state.channels).find((c) => c.partner === net.node('A').address)!
          expect(a.waitingSync).toBeUndefined()
          if ([...beforeCopy, ...afterCopy, ...afterRestore].some((o) => o.kind === 'withdraw')) return
          expect(a.partnerEnd.nonce).toBe(b.our.nonce)
          expect(a.our.nonce).toBe(b.partnerEnd.nonce)
          expect(a.our.balanceProof?.balanceHash).toBe(b.partnerEnd.balanceProof?.balanceHash)
        },
      ),
      {
        numRuns: 80,
        examples: [
          // The partner registered the secret on chain between the copy and the restore: without the sync catching up
          // from the copy's block, A expired the lock (LockExpired under nonce 2) and B refused it.
          [
            [
              { kind: 'pay', flow: 0, amount: 1n },
              { kind: 'deliver', pick: 0 },
              { kind: 'mine', blocks: 11 },
            ],
            [
              { kind: 'deliver', pick: 0 },
              { kind: 'deliver', pick: 0 },
            ],
            [1, 0],
            [
              { kind: 'mine', blocks: 11 },
              { kind: 'mine', blocks: 4 },
            ],
          ],
        ],
      },
    )
  }, 180_000)

  test('a waiting channel carries no payment, no withdraw and no close; the partner answer syncs it, and it pays again', async () => {
    const net = await network()
    await net.pay('A', 'B', 30n, 1n)
    await net.deliverAll()
    const copy = structuredClone(net.node('A').state)
    await net.pay('A', 'B', 20n, 2n)
    await net.deliverAll()
    await wipeAndRestore(net, copy, net.node('A').sent.length, [99, 99])
    const a = net.node('A')
    const channel = channelAB(a.state)
    expect(channel.our.nonce).toBeLessThan(channelAB(net.node('B').state).partnerEnd.nonce)

    for (const change of [
      { type: 'withdraw' as const, tokenNetwork: channel.tokenNetwork, channelId: channel.id, totalWithdraw: 1n },
      { type: 'closeChannel' as const, tokenNetwork: channel.tokenNetwork, channelId: channel.id },
    ]) {
      const { state, effects } = transition(a.state, change, defaultContext)
      expect(state).toBe(a.state)
      expect(effects).toEqual([
        { type: 'event', event: expect.objectContaining({ type: 'actionRejected', reason: expect.stringMatching(/waits for its partner/) }) },
      ])
    }
    await net.pay('A', 'B', 5n, 3n)
    expect(net.outcomes('A', 3n)).toEqual([expect.objectContaining({ type: 'paymentSentFailed', reason: expect.stringMatching(/waits for its partner/) })])

    // The partner's answer: A adopts its own newer proof (signed by A before the wipe) and goes on from its nonce.
    expect(await net.deliverMessage('A', 'B', 'ChannelSyncRequest')).toBe(true)
    expect(await net.deliverMessage('B', 'A', 'ChannelSync')).toBe(true)
    expect(a.events.at(-1)).toMatchObject({ type: 'channelSynced', adopted: { ours: true, partner: false } })
    const synced = channelAB(a.state)
    expect(synced.waitingSync).toBeUndefined()
    expect(synced.our.nonce).toBe(channelAB(net.node('B').state).partnerEnd.nonce)
    expect(synced.our.balanceProof!.transferredAmount).toBe(50n)
    await net.pay('A', 'B', 5n, 4n)
    await net.deliverAll()
    expect(net.outcomes('A', 4n)).toEqual([expect.objectContaining({ type: 'paymentSentSuccess' })])
    expect(channelAB(net.node('B').state).partnerEnd.balanceProof!.transferredAmount).toBe(55n)
  })

  test('a secret the partner registered on-chain while the channel waited: the payment succeeds after the sync, never expires', async () => {
    const net = await network()
    await net.pay('A', 'B', 7n, 1n)
    expect(await net.deliverMessage('A', 'B', 'LockedTransfer')).toBe(true)
    const copy = structuredClone(net.node('A').state)
    // B asks for the secret, A reveals it, and B has it: then A's process is gone, its copy from before.
    expect(await net.deliverMessage('B', 'A', 'SecretRequest')).toBe(true)
    expect(await net.deliverMessage('A', 'B', 'RevealSecret')).toBe(true)
    await wipeAndRestore(net, copy, net.node('A').sent.length, [99, 99])
    // B registers the secret near the lock's expiration; A, still waiting for its sync, can sign no Unlock yet.
    await net.mine(15)
    expect(net.mined.some((m) => m.change.type === 'secretRegistered')).toBe(true)
    expect(net.outcomes('A', 1n)).toEqual([])
    await net.deliverAll()
    await net.mine(12)
    await net.deliverAll()
    // Once synced: the Unlock under the next nonce, which B takes; the payment is a success, as B was paid.
    expect(net.outcomes('A', 1n)).toEqual([expect.objectContaining({ type: 'paymentSentSuccess' })])
    expect(net.node('A').sent.filter((s) => s.message.type === 'LockExpired')).toEqual([])
    expect(net.node('B').events.filter((e) => e.type === 'messageRejected')).toEqual([])
    expect(channelAB(net.node('A').state).our.nonce).toBe(
      Object.values(net.node('B').state.channels).find((c) => c.partner === net.node('A').address)!.partnerEnd.nonce,
    )
  })

  test('a channel the partner closed while the node was wiped gets the newer proof the sync brings on-chain too', async () => {
    const net = await network()
    await net.pay('B', 'A', 30n, 1n)
    await net.deliverAll()
    const copy = structuredClone(net.node('A').state)
    // B pays A more after the copy; the copy knows only B's older proof.
    await net.pay('B', 'A', 20n, 2n)
    await net.deliverAll()
    await wipeAndRestore(net, copy, net.node('A').sent.length, [99, 99])
    const channel = channelAB(net.node('A').state)
    const newest = channelAB(net.node('B').state).our.balanceProof!
    expect(channel.partnerEnd.balanceProof!.nonce).toBeLessThan(newest.nonce)

    // B closes (with A's proof); A, still waiting for its sync, answers with the copy's older proof of B's.
    await net.dispatch('B', { type: 'closeChannel', tokenNetwork: channel.tokenNetwork, channelId: channel.id })
    await net.mine(2)
    const onchain = () => net.chain.channels.get(channel.id)!.sides[net.node('B').address.toLowerCase()]!.nonce
    expect(onchain()).toBe(channel.partnerEnd.balanceProof!.nonce)

    // The sync brings B's newest proof: A submits it too, and the chain holds it.
    expect(await net.deliverMessage('A', 'B', 'ChannelSyncRequest')).toBe(true)
    expect(await net.deliverMessage('B', 'A', 'ChannelSync')).toBe(true)
    expect(net.node('A').transactions.at(-1)).toMatchObject({ type: 'update', balanceProof: { nonce: newest.nonce } })
    await net.mine(2)
    expect(onchain()).toBe(newest.nonce)
    expect(net.chain.failures).toEqual([])
  })

  test('an answer that does not prove what it claims changes nothing: a proof not signed by us, locks off the locksroot, another sender', async () => {
    const net = await network()
    await net.pay('A', 'B', 30n, 1n)
    await net.deliverAll()
    await wipeAndRestore(net, structuredClone(net.node('A').state), net.node('A').sent.length, [99, 99])
    await net.deliverMessage('A', 'B', 'ChannelSyncRequest')
    const b = net.node('B')
    const answer = b.sent.at(-1)!.message as Signed<ChannelSync>
    expect(answer.type).toBe('ChannelSync')
    const { signature: _, ...plain } = answer
    const ours = plain.requester_balance_proof!
    const forged = [
      // Our proof with a higher transferred amount, signed by B: not our signature.
      { ...plain, requester_balance_proof: { ...ours, nonce: ours.nonce + 1n, transferred_amount: 1n, signature: signatureOf(b.key, plain, ours) } },
      // A lock that is not in the locksroot.
      { ...plain, sender_locks: [{ amount: 1n, expiration: 99n, secrethash: `0x${'22'.repeat(32)}` as const }] },
    ]
    const a = net.node('A')
    for (const message of forged) {
      const signed = await signMessage(jsSecp256k1, b.key, message as ChannelSync)
      const { state, effects } = transition(a.state, await net.received('A', signed, b.address), defaultContext)
      expect(channelAB(state).waitingSync).toBe(true)
      expect(effects).toEqual([{ type: 'event', event: expect.objectContaining({ type: 'messageRejected', messageType: 'ChannelSync' }) }])
    }
    // Signed by C, who is not the partner.
    const fromC = await signMessage(jsSecp256k1, net.node('C').key, plain as ChannelSync)
    expect(channelAB(transition(a.state, await net.received('A', fromC, net.node('C').address), defaultContext).state).waitingSync).toBe(true)
    // The honest answer syncs it.
    await net.deliverMessage('B', 'A', 'ChannelSync')
    expect(channelAB(a.state).waitingSync).toBeUndefined()
  })

  test('a channel the copy did not hold, opened before the restore, waits too; one opened after it does not', async () => {
    const net = new Network(['A', 'B', 'C'])
    const empty = structuredClone(net.node('A').state)
    await net.open('A', 'B', 100n, 0n)
    await net.pay('A', 'B', 10n, 1n)
    await net.deliverAll()
    const a = net.node('A')
    // Restored from a copy taken before the channel with B was opened: the sync finds it on chain, opened up to the head.
    a.state = transition(empty, { type: 'restored', version: 1n, openedUpTo: net.chain.block }, defaultContext).state
    for (const event of net.chain.channels.values()) {
      const change = { type: 'channelOpened' as const, tokenNetwork: net.chain.tokenNetwork, channelId: event.id, participant1: event.a, participant2: event.b }
      a.state = transition(a.state, { ...change, settleTimeout: 100n, blockNumber: net.chain.block, revealTimeout: 10n }, defaultContext).state
    }
    expect(channelAB(a.state)).toMatchObject({ waitingSync: true, our: { nonce: 0n } })
    await net.dispatch('A', { type: 'requestChannelSyncs' })
    await net.deliverMessage('A', 'B', 'ChannelSyncRequest')
    await net.deliverMessage('B', 'A', 'ChannelSync')
    expect(channelAB(a.state).waitingSync).toBeUndefined()
    expect(channelAB(a.state).our.nonce).toBe(channelAB(net.node('B').state).partnerEnd.nonce)
    // A channel opened after the restore has nothing signed before: it carries payments at once.
    await net.mine(1)
    await net.open('A', 'C', 100n, 0n)
    const withC = Object.values(a.state.channels).find((c) => c.partner === net.node('C').address)!
    expect(withC.waitingSync).toBeUndefined()
  })
})

/** A signature by `key` over our proof with a higher nonce and another transferred amount: what B would forge. */
function signatureOf(key: Hex, channel: Omit<ChannelSync, 'signature'>, proof: SyncBalanceProof): Hex {
  return signPackedSync(jsSecp256k1, key, packSyncProof(channel, { ...proof, nonce: proof.nonce + 1n, transferred_amount: 1n }))
}
