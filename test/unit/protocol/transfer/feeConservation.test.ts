import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { balance } from '../../../../src/protocol/channel/amounts.ts'
import { feeMargin, routeAmountWithFees } from '../../../../src/protocol/fees/index.ts'
import { channelWith } from '../../../../src/protocol/state/access.ts'
import type { NodeEvent } from '../../../../src/protocol/state/effects.ts'
import { mediationChannels } from '../../../../src/protocol/transfer/feeViews.ts'
import { Network } from '../support/network.ts'

// Money is conserved through mediators that charge fees (docs/decisions/0069): over random routes of one to three
// mediators, random deposits, schedules (flat, proportional, imbalance, capped or not), amounts, estimates (exact as a
// pathfinding service would give them, too low, too high, none) and fee limits, what the payer pays is what the
// mediators keep and the target receives, to the unit, and every event says so; a payment that fails moves nothing.

const mediatorOf = fc.record({
  flat: fc.bigInt({ min: 0n, max: 50n }),
  proportional: fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: 50_000n })),
  imbalance: fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: 50_000n })),
  capFees: fc.boolean(),
  /** What the mediator put in on the side towards the payer (it can refund with it) and towards the payee. */
  back: fc.bigInt({ min: 0n, max: 20_000n }),
  forth: fc.bigInt({ min: 0n, max: 20_000n }),
})

const caseOf = fc.record({
  mediators: fc.array(mediatorOf, { minLength: 1, maxLength: 3 }),
  payerDeposit: fc.bigInt({ min: 0n, max: 20_000n }),
  targetDeposit: fc.bigInt({ min: 0n, max: 20_000n }),
  amount: fc.bigInt({ min: 1n, max: 5_000n }),
  estimate: fc.oneof(
    fc.constant({ kind: 'exact' as const }),
    fc.record({ kind: fc.constant('off' as const), by: fc.bigInt({ min: -200n, max: 200n }) }),
    fc.constant({ kind: 'none' as const }),
  ),
  maxFee: fc.option(fc.bigInt({ min: 0n, max: 1_000n }), { nil: undefined }),
})

type Case = typeof caseOf extends fc.Arbitrary<infer T> ? T : never

const eventsOf = <T extends NodeEvent['type']>(net: Network, name: string, type: T) =>
  net.node(name).events.filter((e): e is Extract<NodeEvent, { type: T }> => e.type === type)

async function run(c: Case) {
  const names = ['P', ...c.mediators.map((_, i) => `M${i + 1}`), 'T']
  const net = new Network(names)
  const token = net.chain.token.toLowerCase()
  // Each channel: the forwarding side's deposit, and what its partner put in.
  for (let i = 0; i + 1 < names.length; i++) {
    const forward = i === 0 ? c.payerDeposit : c.mediators[i - 1]!.forth
    const back = i + 1 < names.length - 1 ? c.mediators[i]!.back : c.targetDeposit
    await net.open(names[i]!, names[i + 1]!, forward, back)
  }
  for (const [i, m] of c.mediators.entries())
    await net.dispatch(`M${i + 1}`, {
      type: 'setMediationFees',
      fees: { capFees: m.capFees, tokens: { [token]: { flat: m.flat, proportional: m.proportional, imbalance: m.imbalance } } },
    })
  const channel = (a: string, b: string) => channelWith(net.node(a).state, net.chain.tokenNetwork, net.node(b).address)
  const holdings = () =>
    Object.fromEntries(
      names.map((n) => [n, Object.values(net.node(n).state.channels).reduce((sum, ch) => sum + balance(ch.our, ch.partnerEnd), 0n)]),
    ) as Record<string, bigint>

  // The route's fee as a pathfinding service would work it out from the mediators' own channels.
  const mediations = c.mediators.map((_, i) =>
    mediationChannels(net.node(names[i + 1]!).state, channel(names[i + 1]!, names[i]!)!, channel(names[i + 1]!, names[i + 2]!)!),
  )
  const exact = routeAmountWithFees(c.amount, mediations)
  const estimate = c.estimate.kind === 'none' ? undefined : (exact?.amount ?? c.amount) - c.amount + (c.estimate.kind === 'off' ? c.estimate.by : 0n)
  const before = holdings()
  await net.pay('P', 'T', c.amount, 1n, [names.slice(1)], undefined, {
    ...(estimate !== undefined ? { routeFees: [estimate] } : {}),
    ...(c.maxFee !== undefined ? { maxFee: c.maxFee } : {}),
  })
  await net.deliverAll()
  // Whatever failed expires and is taken back.
  await net.mine(40)
  await net.deliverAll()
  const after = holdings()
  const change = (n: string) => after[n]! - before[n]!

  const sent = eventsOf(net, 'P', 'paymentSentSuccess')
  const failed = eventsOf(net, 'P', 'paymentSentFailed')
  expect(sent.length + failed.length, 'the payment ended once').toBe(1)
  expect(
    names.reduce((sum, n) => sum + change(n), 0n),
    'money is conserved',
  ).toBe(0n)
  for (const n of names) expect(net.node(n).state.initiators, n).toEqual({})
  expect(net.violations).toEqual([])

  if (sent.length) {
    const [paid] = sent
    const [received] = eventsOf(net, 'T', 'paymentReceivedSuccess')
    // The payer paid the amount and what its lock carried beyond it, never more than its fee limit allows.
    expect(change('P')).toBe(-(c.amount + paid!.fee))
    if (c.maxFee !== undefined) expect(paid!.fee <= c.maxFee).toBe(true)
    expect(paid!.fee).toBe((estimate ?? 0n) + feeMargin(c.amount, estimate ?? 0n))
    // Each mediator kept what its history says it earned; the target got what arrived, at least the amount.
    c.mediators.forEach((_, i) => {
      const [mediated] = eventsOf(net, `M${i + 1}`, 'mediationSucceeded')
      expect(change(`M${i + 1}`)).toBe(mediated!.fee)
    })
    expect(received!.amount >= c.amount).toBe(true)
    expect(change('T')).toBe(received!.amount)
  } else {
    for (const n of names) expect(change(n), `${n} moved money in a failed payment`).toBe(0n)
    for (const n of names) expect(eventsOf(net, n, 'mediationSucceeded'), n).toEqual([])
  }
  return { succeeded: sent.length > 0, reason: failed[0]?.reason }
}

describe('fees along a route', () => {
  test('what the payer pays is what the mediators keep and the target receives', async () => {
    const outcomes = { succeeded: 0, tooExpensive: 0, short: 0, refunded: 0 }
    await fc.assert(
      fc.asyncProperty(caseOf, async (c) => {
        const { succeeded, reason } = await run(c)
        if (succeeded) outcomes.succeeded++
        else if (reason?.includes('--pathfinding-max-fee')) outcomes.tooExpensive++
        else if (reason?.startsWith('the target was offered')) outcomes.short++
        else outcomes.refunded++
        return true
      }),
      { numRuns: 120 },
    )
    // The cases cover each way a payment with fees ends.
    expect(outcomes.succeeded).toBeGreaterThan(10)
    expect(outcomes.tooExpensive).toBeGreaterThan(0)
    expect(outcomes.short).toBeGreaterThan(0)
    expect(outcomes.refunded).toBeGreaterThan(0)
  })
})
