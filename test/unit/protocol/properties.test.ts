import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { balance, withdrawTotal } from '../../../src/protocol/channel/amounts.ts'
import type { Message } from '../../../src/protocol/messages/types.ts'
import type { Channel } from '../../../src/protocol/state/types.ts'
import { Network } from './support/network.ts'

const names = ['A', 'B', 'C'] as const
type Name = (typeof names)[number]

type Step =
  | { kind: 'pay'; from: Name; to: Name; amount: bigint; lockTimeout?: bigint }
  | { kind: 'deliver'; index: number; duplicate: boolean }
  | { kind: 'mine'; blocks: number }
  | { kind: 'offline'; node: Name; online: boolean }
  | { kind: 'withdraw'; node: Name; amount: bigint }
  | { kind: 'restart'; node: Name }
  | { kind: 'close'; node: Name }
  | { kind: 'lag'; node: Name; behind: boolean }

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      // A 14-block lock reaches B inside B's reveal timeout (15) of its next channel: B refunds it.
      {
        kind: fc.constant('pay' as const),
        from: fc.constantFrom(...names),
        to: fc.constantFrom(...names),
        amount: fc.bigInt({ min: 1n, max: 60n }),
        lockTimeout: fc.constantFrom(14n, 30n),
      },
      { requiredKeys: ['kind', 'from', 'to', 'amount'] },
    ),
  },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('deliver' as const), index: fc.nat(20), duplicate: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('mine' as const), blocks: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('offline' as const), node: fc.constantFrom(...names), online: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('withdraw' as const), node: fc.constantFrom(...names), amount: fc.bigInt({ min: 1n, max: 40n }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), node: fc.constantFrom(...names) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('close' as const), node: fc.constantFrom('A', 'C') }) },
  // A node's sync falls behind the chain (or catches up): its shell still sees the chain's head (docs/decisions/0056).
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('lag' as const), node: fc.constantFrom(...names), behind: fc.boolean() }) },
)

/** The two sides of one channel, in the view of each of its two nodes. */
function views(net: Network): { key: string; a: Channel; b: Channel | undefined }[] {
  const all: { key: string; a: Channel; b: Channel | undefined }[] = []
  for (const n of names) {
    for (const [key, c] of Object.entries(net.node(n).state.channels)) {
      const partner = net.byAddress(c.partner)!
      all.push({ key, a: c, b: partner.state.channels[key] })
    }
  }
  return all
}

function checkAlways(net: Network) {
  for (const { a } of views(net)) {
    // Whatever happens, the two sides together hold exactly what the contract holds for the channel.
    expect(balance(a.our, a.partnerEnd) + balance(a.partnerEnd, a.our)).toBe(
      a.our.deposit + a.partnerEnd.deposit - withdrawTotal(a.our) - withdrawTotal(a.partnerEnd),
    )
    expect(balance(a.our, a.partnerEnd)).toBeGreaterThanOrEqual(0n)
  }
  expect(net.violations).toEqual([])
}

async function run(net: Network, steps: Step[], payments: Map<bigint, Name>) {
  const mid: Record<Name, Name[]> = { A: ['B', 'C'], B: [], C: ['B', 'A'] }
  let paymentId = 1n
  for (const s of steps) {
    switch (s.kind) {
      case 'pay': {
        if (s.from === s.to) break
        const direct = (s.from === 'A' && s.to === 'B') || s.from === 'B' || s.to === 'B'
        const routes = direct ? [[s.to]] : [mid[s.from]]
        await net.pay(s.from, s.to, s.amount, paymentId, routes, s.lockTimeout)
        payments.set(paymentId, s.from)
        paymentId++
        break
      }
      case 'deliver':
        await net.deliver(s.index, s.duplicate)
        break
      case 'mine':
        await net.mine(s.blocks)
        break
      case 'offline':
        net.node(s.node).online = s.online
        break
      case 'withdraw': {
        const c = Object.values(net.node(s.node).state.channels)[0]
        if (c && c.state === 'opened' && withdrawTotal(c.our) + s.amount <= c.our.deposit) {
          await net.dispatch(s.node, { type: 'withdraw', tokenNetwork: c.tokenNetwork, channelId: c.id, totalWithdraw: withdrawTotal(c.our) + s.amount })
        }
        break
      }
      case 'restart':
        net.restart(s.node)
        break
      case 'close': {
        const c = Object.values(net.node(s.node).state.channels)[0]
        if (c) await net.dispatch(s.node, { type: 'closeChannel', tokenNetwork: c.tokenNetwork, channelId: c.id })
        break
      }
      case 'lag':
        await net.stall(s.node, s.behind)
        break
    }
    checkAlways(net)
  }
}

const pay = (from: Name, to: Name, amount: bigint, lockTimeout?: bigint): Step => ({ kind: 'pay', from, to, amount, ...(lockTimeout ? { lockTimeout } : {}) })
const mine = (blocks: number): Step => ({ kind: 'mine', blocks })
const deliver: Step = { kind: 'deliver', index: 0, duplicate: false }
/** A counterexample fast-check found (seed -341945164), before the quiet let refused messages come again. */
const lagRefusesLockExpired: Step[] = [
  pay('A', 'C', 1n, 14n),
  mine(4),
  mine(1),
  mine(7),
  deliver,
  { kind: 'lag', node: 'A', behind: true },
  mine(8),
  deliver,
  { kind: 'close', node: 'C' },
  deliver,
  mine(2),
  mine(1),
  deliver,
  deliver,
  deliver,
  deliver,
]

/** Brings everyone online and lets every message arrive and every lock, withdraw and settle window pass. */
async function quiesce(net: Network) {
  for (const n of names) {
    net.node(n).online = true
    await net.stall(n, false)
  }
  for (let i = 0; i < 160; i++) {
    // What a partner refused (it lagged the chain, say) comes again, as a runtime's retries would bring it.
    if (i % 8 === 0) net.resendUnanswered()
    await net.deliverAll()
    await net.mine(1)
  }
  await net.deliverAll()
}

describe('three nodes A-B-C wired only through the pure transition (property)', () => {
  // checkAlways also holds the rule of docs/decisions/0056 through the Network: whatever a node's sync lags, every
  // lock is sent with more blocks left than its channel's reveal timeout and every secret asked for so, from the head
  // (without the head in the changes, runs with a lagging node fail it).
  test('balances are conserved, nonces strictly increase, payments all end, and views agree after quiet', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 15, maxLength: 60 }), async (steps) => {
        const net = new Network([...names])
        // Every other payment carries its secret in the metadata (the target skips the SecretRequest).
        net.secretInMetadata = (id) => id % 2n === 1n
        await net.open('A', 'B', 200n, 150n, 100n, 10n)
        await net.open('B', 'C', 150n, 200n, 100n, 10n)
        // B, the mediator, wants 15 blocks to claim a lock on-chain; A and C 10.
        for (const partner of ['A', 'C'] as const) {
          const c = Object.values(net.node('B').state.channels).find((ch) => ch.partner === net.node(partner).address)!
          await net.dispatch('B', { type: 'setRevealTimeout', tokenNetwork: c.tokenNetwork, channelId: c.id, revealTimeout: 15n })
        }
        const payments = new Map<bigint, Name>()
        await run(net, steps, payments)
        await quiesce(net)
        checkAlways(net)

        // Every payment ended exactly once, as a success or a failure.
        for (const [id, from] of payments) {
          const outcomes = net.outcomes(from, id)
          expect(outcomes.length, `payment ${id} from ${from}`).toBe(1)
        }
        // Each node's nonces strictly increase in every channel (over every message that spends one).
        for (const n of names) {
          const last = new Map<string, bigint>()
          for (const { message } of net.node(n).sent) {
            const m = message as Message & { nonce?: bigint; channel_identifier?: bigint }
            if (m.nonce === undefined || m.channel_identifier === undefined) continue
            const k = `${m.channel_identifier}`
            const prev = last.get(k) ?? 0n
            expect(m.nonce, `${n} ${m.type}`).toBeGreaterThan(prev)
            last.set(k, m.nonce)
          }
        }
        // After quiet, both ends of every open channel see the same channel.
        for (const { key, a, b } of views(net)) {
          if (!b || a.state !== 'opened' || b.state !== 'opened') continue
          const strip = (c: Channel['our']) => ({
            deposit: c.deposit,
            withdrawn: c.withdrawn,
            nonce: c.nonce,
            locks: c.locks.map(({ secret: _, ...l }) => l),
            pending: c.pendingWithdraws.map((w) => w.totalWithdraw),
            t: c.balanceProof?.transferredAmount ?? 0n,
            l: c.balanceProof?.lockedAmount ?? 0n,
          })
          expect(strip(a.our), key).toEqual(strip(b.partnerEnd))
          expect(strip(a.partnerEnd), key).toEqual(strip(b.our))
          expect(a.our.locks, 'no lock is left pending after quiet').toEqual([])
        }
        // No transfer task is left hanging.
        for (const n of names) {
          expect(net.node(n).state.initiators).toEqual({})
          expect(net.node(n).state.mediators).toEqual({})
        }
      }),
      {
        numRuns: 30,
        // A refunds a lock back while A lags the chain; B's LockExpired for it reaches A before A has seen it expire,
        // and A refuses it: only B's resend, once A has caught up, brings the two views of A-B together again.
        examples: [[lagRefusesLockExpired]],
      },
    )
    // What random runs reach is not asserted (it would fail at random): B's refunds are shown by the built cases of
    // test/unit/protocol/transfer/mediator.test.ts, and the properties above hold for the runs that reach them.
  })
})

type RouteConfig = {
  abSettle: bigint
  bcSettle: bigint
  cdSettle: bigint
  /** B's reveal timeout towards C, C's towards D, as fractions of the channel's settle timeout (at most half). */
  bReveal: number
  cReveal: number
  bDeposit: bigint
  cDeposit: bigint
  /** Whether A's state knows the graph's settle timeouts (a state stored before they were kept does not). */
  aKnowsSettleTimeouts: boolean
  payments: { amount: bigint; lockTimeout?: bigint }[]
}

const routeConfig: fc.Arbitrary<RouteConfig> = fc.record({
  abSettle: fc.bigInt({ min: 20n, max: 300n }),
  bcSettle: fc.bigInt({ min: 20n, max: 200n }),
  cdSettle: fc.bigInt({ min: 20n, max: 200n }),
  bReveal: fc.double({ min: 0, max: 1, noNaN: true }),
  cReveal: fc.double({ min: 0, max: 1, noNaN: true }),
  bDeposit: fc.bigInt({ min: 0n, max: 100n }),
  cDeposit: fc.bigInt({ min: 0n, max: 100n }),
  aKnowsSettleTimeouts: fc.boolean(),
  payments: fc.array(fc.record({ amount: fc.bigInt({ min: 1n, max: 60n }), lockTimeout: fc.bigInt({ min: 7n, max: 250n }) }, { requiredKeys: ['amount'] }), {
    minLength: 1,
    maxLength: 6,
  }),
})

describe('a route A-B-C-D whose hops can give a lock back (property)', () => {
  test('every payment ends, paid or failed with a reason, without a single block being mined', async () => {
    await fc.assert(
      fc.asyncProperty(routeConfig, async (cfg) => {
        const net = new Network(['A', 'B', 'C', 'D'])
        // Every side starts with a reveal timeout of 5; the mediators raise theirs towards their payees.
        await net.open('A', 'B', 1000n, 1000n, cfg.abSettle, 5n)
        const bc = await net.open('B', 'C', cfg.bDeposit, 1000n, cfg.bcSettle, 5n)
        const cd = await net.open('C', 'D', cfg.cDeposit, 0n, cfg.cdSettle, 5n)
        const raise = async (node: string, channelId: bigint, settle: bigint, share: number) => {
          const reveal = 5n + BigInt(Math.floor(share * Number(settle / 2n - 5n)))
          await net.dispatch(node, { type: 'setRevealTimeout', tokenNetwork: net.chain.tokenNetwork, channelId, revealTimeout: reveal })
        }
        await raise('B', bc, cfg.bcSettle, cfg.bReveal)
        await raise('C', cd, cfg.cdSettle, cfg.cReveal)
        if (!cfg.aKnowsSettleTimeouts) for (const c of Object.values(net.node('A').state.tokenNetworks[net.chain.tokenNetwork]!.graph)) delete c.settleTimeout
        const start = net.chain.block
        let paid = 0n
        for (const [i, p] of cfg.payments.entries()) {
          const id = BigInt(i + 1)
          await net.pay('A', 'D', p.amount, id, [['B', 'C', 'D']], p.lockTimeout)
          await net.deliverAll()
          const outcomes = net.outcomes('A', id)
          expect(outcomes, `payment ${id}`).toHaveLength(1)
          const outcome = outcomes[0]!
          if (outcome.type === 'paymentSentSuccess') paid += p.amount
          else expect(outcome.type === 'paymentSentFailed' && outcome.reason).toMatch(/^no route could carry the payment: /)
        }
        expect(net.chain.block).toBe(start)
        // D got exactly what the succeeded payments carried; every channel still holds what the contract holds.
        const received = net
          .node('D')
          .events.filter((e) => e.type === 'paymentReceivedSuccess')
          .reduce((sum, e) => sum + (e as { amount: bigint }).amount, 0n)
        expect(received).toBe(paid)
        for (const n of ['A', 'B', 'C', 'D']) {
          for (const c of Object.values(net.node(n).state.channels)) {
            expect(balance(c.our, c.partnerEnd) + balance(c.partnerEnd, c.our)).toBe(c.our.deposit + c.partnerEnd.deposit)
          }
        }
        expect(net.violations).toEqual([])
      }),
      { numRuns: 60 },
    )
  })
})
