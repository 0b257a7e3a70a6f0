// A nonce that comes back (docs/decisions/0029): the partner's resend is acknowledged again, a different message under
// a used nonce is evidence and never acknowledged, and our own nonce coming back with content we never signed marks
// the state stale, after which nothing is signed.
import fc from 'fast-check'
import { bytesToHex, type Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { locksroot } from '../../../../src/protocol/locks.ts'
import { packMessage } from '../../../../src/protocol/messages/pack.ts'
import { signMessage } from '../../../../src/protocol/messages/index.ts'
import type { LockedTransfer, Message, Signed } from '../../../../src/protocol/messages/types.ts'
import { takesNonce, type NonceMessage } from '../../../../src/protocol/channel/usedNonce.ts'
import { defaultContext } from '../../../../src/protocol/state/access.ts'
import type { Channel } from '../../../../src/protocol/state/types.ts'
import { transition } from '../../../../src/protocol/transition.ts'
import { Network } from '../support/network.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const channelOf = (net: Network, name: string): Channel => Object.values(net.node(name).state.channels)[0]!
const signedBytes = (m: Signed<Message>) => bytesToHex(packMessage(m))

/** A network where A paid B `amounts` (every message delivered): A's nonce messages to B, in the order A signed them. */
async function honestRun(amounts: bigint[]): Promise<Signed<NonceMessage>[]> {
  const net = new Network(['A', 'B'])
  await net.open('A', 'B', 1000n, 0n)
  for (const [i, amount] of amounts.entries()) {
    await net.pay('A', 'B', amount, BigInt(i + 1))
    await net.deliverAll()
  }
  const b = net.node('B').address.toLowerCase()
  return net
    .node('A')
    .sent.filter((s) => s.to.toLowerCase() === b && takesNonce(s.message))
    .map((s) => s.message as Signed<NonceMessage>)
}

/** A fresh network in the same state as the honest run's before its first payment: B is fed by the adversary. */
async function freshNet(): Promise<Network> {
  const net = new Network(['A', 'B'])
  await net.open('A', 'B', 1000n, 0n)
  return net
}

/** The fresh network after one payment A -> B, every message delivered: A's channel end has used nonces. */
async function afterOnePayment() {
  const net = await freshNet()
  await net.pay('A', 'B', 10n, 1n)
  await net.deliverAll()
  return { net, a: net.node('A'), channel: channelOf(net, 'A') }
}

type Step =
  | { kind: 'next' }
  | { kind: 'resend'; pick: number }
  | { kind: 'early'; pick: number }
  | { kind: 'variant'; pick: number; field: number; delta: bigint }

/** A copy of `m` with one field changed, signed again with A's real key: a message A could really send. */
async function variantOf(net: Network, m: Signed<NonceMessage>, field: number, delta: bigint): Promise<Signed<NonceMessage>> {
  const { signature: _, ...plain } = m
  const changed: Record<string, unknown> = { ...plain }
  const numeric = ['message_identifier', 'transferred_amount', 'locked_amount', 'nonce', 'payment_identifier'].filter((k) => typeof changed[k] === 'bigint')
  const key = numeric[field % numeric.length]!
  const value = changed[key] as bigint
  // Fields stay in their range (ids and nonces at least 1): a message A could sign and send.
  changed[key] = value + delta >= 1n ? value + delta : value + (delta < 0n ? -delta : delta)
  if (field % 7 === 6) changed.locksroot = locksroot([])
  return signMessage(jsSecp256k1, net.node('A').key, changed as unknown as NonceMessage)
}

describe('a nonce that comes back', () => {
  test('an adversarial partner (resends, reorderings, re-signed variants of real proofs) never gets a variant acknowledged nor corrupts the state', async () => {
    const honest = await honestRun([30n, 20n, 7n])
    expect(honest.length).toBeGreaterThanOrEqual(6)
    const step: fc.Arbitrary<Step> = fc.oneof(
      { weight: 4, arbitrary: fc.constant({ kind: 'next' as const }) },
      { weight: 2, arbitrary: fc.nat().map((pick) => ({ kind: 'resend' as const, pick })) },
      { weight: 1, arbitrary: fc.nat().map((pick) => ({ kind: 'early' as const, pick })) },
      {
        weight: 3,
        arbitrary: fc
          .record({ pick: fc.nat(), field: fc.nat(), delta: fc.bigInt({ min: -2n, max: 3n }).filter((d) => d !== 0n) })
          .map((v) => ({ kind: 'variant' as const, ...v })),
      },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 40 }), async (steps) => {
        const net = await freshNet()
        const a = net.node('A').address
        const b = net.node('B')
        /** What B acknowledged under each nonce, and what it holds as applied under it. */
        const acked = new Map<bigint, Set<string>>()
        let next = 0
        let equivocationsExpected = 0
        const deliver = async (m: Signed<NonceMessage>) => {
          const appliedBefore = net.history.received.get(`B:${Object.keys(b.state.channels)[0]}:${m.nonce}`)
          const sentBefore = b.sent.length
          const before = b.state
          await net.dispatch('B', await net.received('B', m, a))
          const processed = b.sent.slice(sentBefore).some((s) => s.message.type === 'Processed' && s.message.message_identifier === m.message_identifier)
          if (processed) {
            const set = acked.get(m.nonce) ?? new Set()
            set.add(signedBytes(m))
            acked.set(m.nonce, set)
          }
          // A different message under a nonce B had applied: evidence, and nothing else of B's channel changes.
          if (appliedBefore && appliedBefore.signed !== signedBytes(m)) {
            equivocationsExpected++
            const [was, now] = [Object.values(before.channels)[0]!, channelOf(net, 'B')]
            expect({ ...now.partnerEnd, equivocations: 0 }).toEqual({ ...was.partnerEnd, equivocations: 0 })
            expect(b.events.at(-1)).toMatchObject({ type: 'partnerEquivocated', nonce: m.nonce, second: { signature: m.signature } })
          }
        }
        for (const s of steps) {
          if (s.kind === 'next' && next < honest.length) await deliver(honest[next++]!)
          else if (s.kind === 'resend' && next > 0) await deliver(honest[s.pick % next]!)
          else if (s.kind === 'early') await deliver(honest[s.pick % honest.length]!)
          else if (s.kind === 'variant') await deliver(await variantOf(net, honest[s.pick % honest.length]!, s.field, s.delta))
        }
        // Whatever came before, the honest messages still in order after it.
        while (next < honest.length) await deliver(honest[next++]!)

        // Never two different messages acknowledged under one nonce, and what was acknowledged is what B applied.
        const channel = channelOf(net, 'B')
        const key = Object.keys(b.state.channels)[0]!
        for (const [nonce, contents] of acked) {
          expect(contents.size, `nonce ${nonce}`).toBe(1)
          expect(net.history.received.get(`B:${key}:${nonce}`)?.signed).toBe([...contents][0])
        }
        // The state is one B could reach honestly: every nonce up to its end's is applied once, its proof is its last
        // applied message's, its locks are its proof's, and every variant under an applied nonce was counted.
        const end = channel.partnerEnd
        for (let n = 1n; n <= end.nonce; n++) expect(net.history.received.has(`B:${key}:${n}`), `nonce ${n} applied`).toBe(true)
        expect(net.history.received.has(`B:${key}:${end.nonce + 1n}`)).toBe(false)
        if (end.balanceProof) {
          expect(end.balanceProof.nonce).toBeLessThanOrEqual(end.nonce)
          expect(end.balanceProof.locksroot).toBe(locksroot(end.locks))
          expect(end.balanceProof.lockedAmount).toBe(end.locks.reduce((s, l) => s + l.amount, 0n))
          expect(end.balanceProof.transferredAmount + end.balanceProof.lockedAmount).toBeLessThanOrEqual(end.deposit)
        }
        expect(end.equivocations ?? 0).toBe(equivocationsExpected)
        expect(b.events.filter((e) => e.type === 'partnerEquivocated')).toHaveLength(equivocationsExpected)
      }),
      { numRuns: 60 },
    )
  }, 120_000)

  test('the partner closing with a proof of ours beyond our last nonce, or one we never signed, marks the state stale; then nothing is signed', async () => {
    const { a, channel } = await afterOnePayment()
    const closed = (nonce: bigint, ourProofKnown?: boolean) =>
      transition(
        a.state,
        {
          type: 'channelClosed',
          tokenNetwork: channel.tokenNetwork,
          channelId: channel.id,
          closer: channel.partner,
          nonce,
          balanceHash: channel.our.balanceProof!.balanceHash,
          blockNumber: a.state.blockNumber + 1n,
          ...(ourProofKnown === undefined ? {} : { ourProofKnown }),
        },
        defaultContext,
      )
    // Our own latest proof, known: an ordinary close (we answer it), nothing stale.
    const ordinary = closed(channel.our.nonce, true)
    expect(ordinary.state.stale).toBeUndefined()
    for (const [nonce, known, why] of [
      [channel.our.nonce + 1n, true, /beyond the last nonce this state knows we used/],
      [channel.our.nonce, false, /never signed/],
    ] as const) {
      const { state, effects } = closed(nonce, known)
      expect(state.stale).toMatchObject({ source: 'chain', nonce, ourNonce: channel.our.nonce, reason: expect.stringMatching(why) })
      expect(effects).toEqual([{ type: 'event', event: expect.objectContaining({ type: 'staleState', nonce }) }])
      // From then on every change is ignored: a payment signs nothing.
      const after = transition(state, { type: 'block', blockNumber: state.blockNumber + 100n }, defaultContext)
      expect(after).toEqual({ state, effects: [] })
    }
  })

  test('after our close, the partner updating with a proof of ours we never signed marks the state stale', async () => {
    const { a, channel } = await afterOnePayment()
    const { state } = transition(
      a.state,
      {
        type: 'nonClosingUpdated',
        tokenNetwork: channel.tokenNetwork,
        channelId: channel.id,
        closer: a.address,
        nonce: channel.our.nonce + 5n,
        balanceHash: channel.our.balanceProof!.balanceHash,
      },
      defaultContext,
    )
    expect(state.stale).toMatchObject({ source: 'chain', nonce: channel.our.nonce + 5n })
  })

  test('a proof signed with our own key coming back: an echo is ignored; beyond our nonce, or never signed, the state is stale', async () => {
    const { net, a } = await afterOnePayment()
    const ours = a.sent.find((s) => s.message.type === 'LockedTransfer')!.message as Signed<LockedTransfer>
    const echo = await net.received('A', ours, a.address)
    expect(echo).toMatchObject({ ourProofKnown: true })
    expect(transition(a.state, echo, defaultContext)).toEqual({ state: a.state, effects: [] })
    const { signature: _, ...plain } = ours
    const forged = await signMessage(jsSecp256k1, a.key, { ...plain, message_identifier: 1n, transferred_amount: 5n })
    const never = await net.received('A', forged, a.address)
    expect(never).toMatchObject({ ourProofKnown: false })
    expect(transition(a.state, never, defaultContext).state.stale).toMatchObject({ source: 'message', reason: expect.stringMatching(/never signed/) })
    const beyond = await signMessage(jsSecp256k1, a.key, { ...plain, nonce: channelOf(net, 'A').our.nonce + 1n })
    expect(transition(a.state, await net.received('A', beyond, a.address), defaultContext).state.stale).toMatchObject({
      source: 'message',
      reason: expect.stringMatching(/beyond the last nonce/),
    })
  })

  test('a stale state, restored and replayed, stays stale: every change is ignored', async () => {
    const net = await freshNet()
    const a = net.node('A')
    const channel = channelOf(net, 'A')
    const stale = transition(
      a.state,
      {
        type: 'channelClosed',
        tokenNetwork: channel.tokenNetwork,
        channelId: channel.id,
        closer: channel.partner,
        nonce: 3n,
        balanceHash: `0x${'11'.repeat(32)}`,
        blockNumber: 5n,
      },
      defaultContext,
    ).state
    expect(stale.stale).toBeDefined()
    const address: Address = net.node('B').address
    const again = transition(stale, { type: 'closeChannel', tokenNetwork: channel.tokenNetwork, channelId: channel.id }, defaultContext)
    expect(again.effects).toEqual([])
    expect(again.state).toBe(stale)
    expect(address).toBeTruthy()
  })
})
