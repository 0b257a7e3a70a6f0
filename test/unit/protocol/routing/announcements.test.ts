import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { isNewerCapacityUpdate } from '../../../../src/pathfinding/updates.ts'
import { capacity, withdrawTotal } from '../../../../src/protocol/channel/amounts.ts'
import { channelFeeSchedule } from '../../../../src/protocol/fees/schedule.ts'
import type { PFSCapacityUpdate } from '../../../../src/protocol/messages/types.ts'
import { announced, capacityUpdateOf, feeAnnouncementOf } from '../../../../src/protocol/routing/announcements.ts'
import type { StateChange } from '../../../../src/protocol/state/changes.ts'
import type { Channel, NodeState } from '../../../../src/protocol/state/types.ts'
import { Network } from '../support/network.ts'

// A node tells a pathfinding service what each of its channels can carry and what it charges (docs/decisions/0073):
// the core asks for an announcement whenever a transition changes what it would say, the shell signs and sends it.

const channelOf = (net: Network, n: string, partner: string) => Object.values(net.node(n).state.channels).find((c) => c.partner === net.node(partner).address)!
const capacities = (net: Network, n: string) =>
  net
    .node(n)
    .announced.filter((e) => e.type === 'announceCapacity')
    .map((e) => e.update as PFSCapacityUpdate)

describe('the capacity and fee announcements the core asks for', () => {
  test("an opened channel is announced at once, as Raiden's from_channel_state says it, by both of its nodes", async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 0n, 0n, 100n, 10n)
    for (const n of ['A', 'B']) {
      const channel = channelOf(net, n, n === 'A' ? 'B' : 'A')
      expect(net.node(n).announced.map((e) => e.type)).toEqual(['announceCapacity', 'announceFees'])
      expect(net.node(n).announced[0]!.update).toEqual({
        type: 'PFSCapacityUpdate',
        canonical_identifier: { chain_identifier: 31337n, token_network_address: net.chain.tokenNetwork, channel_identifier: id },
        updating_participant: net.node(n).address,
        other_participant: channel.partner,
        updating_nonce: 0n,
        other_nonce: 0n,
        updating_capacity: 0n,
        other_capacity: 0n,
        reveal_timeout: 10n,
      })
      // A node that charges nothing says so.
      expect(net.node(n).announced[1]!.update).toMatchObject({
        type: 'PFSFeeUpdate',
        updating_participant: net.node(n).address,
        fee_schedule: { cap_fees: true, flat: 0n, proportional: 0n, imbalance_penalty: null },
      })
    }
  })

  test('a deposit, a payment and its unlock each move a capacity: a new update each time, with the nonces of then', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 0n, 0n)
    await net.deposit(id, 'A', 100n)
    expect(capacities(net, 'A').at(-1)).toMatchObject({ updating_capacity: 100n, other_capacity: 0n, updating_nonce: 0n, other_nonce: 0n })
    expect(capacities(net, 'B').at(-1)).toMatchObject({ updating_capacity: 0n, other_capacity: 100n })
    // A deposit moves no schedule without an imbalance fee: no fee update for it.
    expect(net.node('A').announced.filter((e) => e.type === 'announceFees')).toHaveLength(1)
    await net.pay('A', 'B', 30n, 1n)
    // A's lock: 30 of its 100 locked, its nonce 1.
    expect(capacities(net, 'A').at(-1)).toMatchObject({ updating_capacity: 70n, other_capacity: 0n, updating_nonce: 1n, other_nonce: 0n })
    await net.deliverAll()
    // Unlocked: B can send the 30 back; each side's last update says the same channel.
    expect(capacities(net, 'A').at(-1)).toMatchObject({ updating_capacity: 70n, other_capacity: 30n, updating_nonce: 2n, other_nonce: 0n })
    expect(capacities(net, 'B').at(-1)).toMatchObject({ updating_capacity: 30n, other_capacity: 70n, updating_nonce: 0n, other_nonce: 2n })
  })

  test('the fees: an update per channel when the node sets them, and at each deposit that moves an imbalance penalty', async () => {
    const net = new Network(['A', 'B', 'C'])
    const ab = await net.open('A', 'B', 100n, 100n)
    await net.open('B', 'C', 100n, 100n)
    const token = net.chain.token.toLowerCase()
    const fees = { capFees: true, tokens: { [token]: { flat: 10n, proportional: 4_000n, imbalance: 3_000n } } }
    const before = net.node('B').announced.length
    await net.dispatch('B', { type: 'setMediationFees', fees })
    const told = net.node('B').announced.slice(before)
    expect(told.map((e) => [e.type, e.channelKey])).toEqual(Object.keys(net.node('B').state.channels).map((key) => ['announceFees', key]))
    expect(told[0]!.update).toMatchObject({ fee_schedule: channelFeeSchedule(fees, token, 200n) })
    // The same fees again: nothing changed, nothing said.
    await net.dispatch('B', { type: 'setMediationFees', fees: structuredClone(fees) })
    expect(net.node('B').announced.length).toBe(before + 2)
    // A deposit changes the channel's capacity, so its imbalance curve: the schedule of that channel only.
    await net.deposit(ab, 'A', 50n)
    const after = net.node('B').announced.slice(before + 2)
    expect(after.map((e) => e.type)).toEqual(['announceCapacity', 'announceFees'])
    expect(after[1]!.update).toMatchObject({ fee_schedule: channelFeeSchedule(fees, token, 250n) })
  })

  test('nothing for a closed channel, nor for one that waits for its sync after a restore', async () => {
    const net = new Network(['A', 'B'])
    const id = await net.open('A', 'B', 100n, 100n)
    const count = net.node('A').announced.length
    await net.dispatch('A', { type: 'closeChannel', tokenNetwork: net.chain.tokenNetwork, channelId: id })
    await net.mine(1)
    expect(channelOf(net, 'A', 'B').state).not.toBe('opened')
    await net.deposit(id, 'B', 10n)
    expect(net.node('A').announced.length).toBe(count)
    expect(announced({ ...channelOf(net, 'A', 'B'), state: 'opened', waitingSync: true })).toBe(false)
  })
})

type Name = 'A' | 'B' | 'C'
type Step =
  | { kind: 'pay'; from: Name; to: Name; amount: bigint; lockTimeout: bigint }
  | { kind: 'deliver'; index: number }
  | { kind: 'mine'; blocks: number }
  | { kind: 'deposit'; node: Name; amount: bigint }
  | { kind: 'withdraw'; node: Name; amount: bigint }
  | { kind: 'fees'; node: Name; flat: bigint; proportional: bigint; imbalance: bigint; capFees: boolean }
  | { kind: 'reveal'; node: Name; revealTimeout: bigint }
  | { kind: 'restart'; node: Name }
  | { kind: 'close'; node: Name }

const node = fc.constantFrom<Name>('A', 'B', 'C')
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('pay' as const),
      from: node,
      to: node,
      amount: fc.bigInt({ min: 1n, max: 80n }),
      lockTimeout: fc.constantFrom(14n, 30n),
    }),
  },
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('deliver' as const), index: fc.nat(20) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('mine' as const), blocks: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deposit' as const), node, amount: fc.bigInt({ min: 1n, max: 100n }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('withdraw' as const), node, amount: fc.bigInt({ min: 1n, max: 60n }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('fees' as const),
      node,
      flat: fc.bigInt({ min: 0n, max: 20n }),
      proportional: fc.bigInt({ min: 0n, max: 50_000n }),
      imbalance: fc.bigInt({ min: 0n, max: 50_000n }),
      capFees: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reveal' as const), node, revealTimeout: fc.bigInt({ min: 5n, max: 15n }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const), node }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('close' as const), node: fc.constantFrom<Name>('A', 'C') }) },
)

/** What a capacity update says, for comparing two. */
const said = (u: PFSCapacityUpdate) => [u.updating_nonce, u.other_nonce, u.updating_capacity, u.other_capacity, u.reveal_timeout]

/**
 * A Network that checks, after every change any node applies, that the core announced exactly what moved: a capacity
 * update for each channel of ours whose update would now say something else, a fee update for each whose schedule
 * changed, none for the others; never a capacity above what the channel holds; and each update newer than the one
 * before it by the pathfinding service's own rule, so that the service takes every one.
 */
class CheckedNetwork extends Network {
  readonly problems: string[] = []
  /** The last capacity update announced per node and channel. */
  private readonly last = new Map<string, PFSCapacityUpdate>()

  override async dispatch(name: string, change: StateChange): Promise<void> {
    const before = this.node(name).state
    const told = this.node(name).announced.length
    await super.dispatch(name, change)
    const after = this.node(name).state
    this.check(name, change, before, after, this.node(name).announced.slice(told))
  }

  private check(name: string, change: StateChange, before: NodeState, after: NodeState, told: Network['nodes'][string]['announced']) {
    const was = (key: string): Channel | undefined => (announced(before.channels[key]) ? before.channels[key] : undefined)
    for (const [key, channel] of Object.entries(after.channels)) {
      const capacityTold = told.filter((e) => e.type === 'announceCapacity' && e.channelKey === key)
      const feesTold = told.filter((e) => e.type === 'announceFees' && e.channelKey === key)
      const where = `${name} ${change.type} ${key}`
      if (!announced(channel)) {
        if (capacityTold.length || feesTold.length) this.problems.push(`${where}: announced a channel that is not open`)
        continue
      }
      const old = was(key)
      const now = capacityUpdateOf(after, channel)
      const moved = !old || said(capacityUpdateOf(before, old)).join() !== said(now).join()
      if (capacityTold.length !== (moved ? 1 : 0)) this.problems.push(`${where}: ${capacityTold.length} capacity updates, moved: ${moved}`)
      const scheduleMoved = !old || JSON.stringify(feeAnnouncementOf(before, old), big) !== JSON.stringify(feeAnnouncementOf(after, channel), big)
      if (feesTold.length !== (scheduleMoved ? 1 : 0)) this.problems.push(`${where}: ${feesTold.length} fee updates, schedule moved: ${scheduleMoved}`)
      for (const e of capacityTold) {
        const u = e.update as PFSCapacityUpdate
        if (said(u).join() !== said(now).join()) this.problems.push(`${where}: announced ${said(u)}, the channel says ${said(now)}`)
        // Never more than the contract holds for the channel, either way or both together.
        const held = capacity(channel.our, channel.partnerEnd)
        if (u.updating_capacity < 0n || u.other_capacity < 0n || u.updating_capacity + u.other_capacity > held)
          this.problems.push(`${where}: capacities ${u.updating_capacity} + ${u.other_capacity} beyond the ${held} the channel holds`)
        const previous = this.last.get(`${name}:${key}`)
        if (!isNewerCapacityUpdate(u, previous))
          this.problems.push(`${where}: ${said(u)} is not newer than ${previous && said(previous)}: a service refuses it`)
        this.last.set(`${name}:${key}`, u)
      }
    }
  }
}

const big = (_key: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)

async function run(net: Network, steps: Step[]) {
  let paymentId = 1n
  const channelFor = (n: Name) => Object.values(net.node(n).state.channels)[0]
  for (const s of steps) {
    switch (s.kind) {
      case 'pay': {
        if (s.from === s.to) break
        const direct = s.from === 'B' || s.to === 'B'
        await net.pay(s.from, s.to, s.amount, paymentId++, direct ? [[s.to]] : [['B', s.to]], s.lockTimeout)
        break
      }
      case 'deliver':
        await net.deliver(s.index)
        break
      case 'mine':
        await net.mine(s.blocks)
        break
      case 'deposit': {
        const c = channelFor(s.node)
        if (c && c.state === 'opened') await net.deposit(c.id, s.node, s.amount)
        break
      }
      case 'withdraw': {
        const c = channelFor(s.node)
        if (c && c.state === 'opened' && withdrawTotal(c.our) + s.amount <= c.our.deposit)
          await net.dispatch(s.node, { type: 'withdraw', tokenNetwork: c.tokenNetwork, channelId: c.id, totalWithdraw: withdrawTotal(c.our) + s.amount })
        break
      }
      case 'fees': {
        const fees = { flat: s.flat, proportional: s.proportional, imbalance: s.imbalance }
        await net.dispatch(s.node, { type: 'setMediationFees', fees: { capFees: s.capFees, tokens: { [net.chain.token.toLowerCase()]: fees } } })
        break
      }
      case 'reveal': {
        const c = channelFor(s.node)
        if (c) await net.dispatch(s.node, { type: 'setRevealTimeout', tokenNetwork: c.tokenNetwork, channelId: c.id, revealTimeout: s.revealTimeout })
        break
      }
      case 'restart':
        net.restart(s.node)
        break
      case 'close': {
        const c = channelFor(s.node)
        if (c) await net.dispatch(s.node, { type: 'closeChannel', tokenNetwork: c.tokenNetwork, channelId: c.id })
        break
      }
    }
  }
}

describe('announcements over random runs (property)', () => {
  test('an update after every change of what a channel carries or costs, none otherwise; never above the channel; each newer than the last', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 60 }), async (steps) => {
        const net = new CheckedNetwork(['A', 'B', 'C'])
        await net.open('A', 'B', 200n, 150n, 100n, 10n)
        await net.open('B', 'C', 150n, 200n, 100n, 10n)
        await run(net, steps)
        for (let i = 0; i < 40; i++) {
          await net.deliverAll()
          await net.mine(1)
        }
        expect(net.problems).toEqual([])
        // Every channel still open was announced, and its last update says what it carries now.
        for (const n of ['A', 'B', 'C']) {
          for (const channel of Object.values(net.node(n).state.channels)) {
            if (!announced(channel)) continue
            const last = capacities(net, n)
              .filter((u) => u.canonical_identifier.channel_identifier === channel.id)
              .at(-1)
            expect(last && said(last)).toEqual(said(capacityUpdateOf(net.node(n).state, channel)))
          }
        }
      }),
      { numRuns: 40 },
    )
  })
})
