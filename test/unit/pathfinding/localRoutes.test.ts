import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { hear, type Heard } from '../../../src/pathfinding/heard.ts'
import { localRoutes } from '../../../src/pathfinding/localRoutes.ts'
import { findRoutes } from '../../../src/protocol/routing/findRoutes.ts'
import { AFTER, capacityUpdate, feeUpdate, twoWays, type TwoWays } from './support/heardNetwork.ts'
import { nativeCurve } from '../../support/curve.ts'

const routesOf = (w: TwoWays, heard: Heard, amount: bigint, target = 'F') =>
  localRoutes(w.net.node('A').state, heard, { tokenNetwork: w.net.chain.tokenNetwork, target: w.at(target), amount }).map((r) => ({
    route: r.route.map((a) => ['A', 'B', 'C', 'D', 'E', 'F'].find((n) => w.at(n) === a)!).join(''),
    fee: r.fee,
  }))

function heardAll(w: TwoWays, heard: Heard, ...updates: Parameters<typeof hear>[2][]) {
  for (const u of updates) expect(hear(heard, w.net.node('A').state, u, { now: AFTER, curve: nativeCurve }).outcome).toBe('accepted')
}

describe("a node's own routes, by what it heard (docs/decisions/0074)", () => {
  test('having heard nothing: the routes by deposits, shortest first, no fee', async () => {
    const w = await twoWays()
    expect(routesOf(w, new Map(), 100n)).toEqual([
      { route: 'BF', fee: 0n },
      { route: 'CDEF', fee: 0n },
    ])
    const byDeposits = findRoutes(w.net.node('A').state, { tokenNetwork: w.net.chain.tokenNetwork, target: w.at('F'), amount: 100n })
    expect(byDeposits.map((r) => r.length)).toEqual([2, 4])
  })

  test("B announces it can send F nothing: A-B-F is left out, whichever side says it; F's word alone is enough", async () => {
    const w = await twoWays()
    const fromB: Heard = new Map()
    heardAll(w, fromB, capacityUpdate(w, 'B', 'F', { updating_nonce: 2n, updating_capacity: 0n, other_capacity: 2000n }))
    expect(routesOf(w, fromB, 100n)).toEqual([{ route: 'CDEF', fee: 0n }])
    const fromF: Heard = new Map()
    heardAll(w, fromF, capacityUpdate(w, 'F', 'B', { other_nonce: 2n, updating_capacity: 2000n, other_capacity: 0n }))
    expect(routesOf(w, fromF, 100n)).toEqual([{ route: 'CDEF', fee: 0n }])
    // B's way back from F is what both sides say it is: 2000 carries 100.
    expect(routesOf(w, fromF, 100n, 'B')[0]).toEqual({ route: 'B', fee: 0n })
  })

  test('a direction announced to carry less than the amount but more than nothing: left out for more, taken for less', async () => {
    const w = await twoWays()
    const heard: Heard = new Map()
    heardAll(w, heard, capacityUpdate(w, 'B', 'F', { updating_nonce: 2n, updating_capacity: 50n }))
    expect(routesOf(w, heard, 100n).map((r) => r.route)).toEqual(['CDEF'])
    expect(routesOf(w, heard, 50n).map((r) => r.route)).toEqual(['BF', 'CDEF'])
  })

  test('the announced fees give each route its fee, and a cheaper longer route comes before a dear short one, as the service orders them', async () => {
    const w = await twoWays()
    const heard: Heard = new Map()
    // B charges 40 on each of its channels (80 a mediation); C, D and E charge 1 on each of theirs.
    heardAll(w, heard, feeUpdate(w, 'B', 'A', 40n), feeUpdate(w, 'B', 'F', 40n))
    for (const [who, partners] of [
      ['C', ['A', 'D']],
      ['D', ['C', 'E']],
      ['E', ['D', 'F']],
    ] as const)
      for (const p of partners) heardAll(w, heard, feeUpdate(w, who, p, 1n))
    // 80 of 100 weighs 80 hops with the service's fee penalty; 6 of 100, 6.
    expect(routesOf(w, heard, 100n)).toEqual([
      { route: 'CDEF', fee: 6n },
      { route: 'BF', fee: 80n },
    ])
  })

  test('a mediator not heard of is taken to charge what this node charges (the guess of 0069); one heard, what it announced', async () => {
    const w = await twoWays()
    const token = w.net.chain.token.toLowerCase()
    await w.net.dispatch('A', { type: 'setMediationFees', fees: { capFees: true, tokens: { [token]: { flat: 20n, proportional: 0n, imbalance: 0n } } } })
    // 20 a mediation (10 on each channel): B's 20, C's, D's and E's 60.
    expect(routesOf(w, new Map(), 100n)).toEqual([
      { route: 'BF', fee: 20n },
      { route: 'CDEF', fee: 60n },
    ])
    const heard: Heard = new Map()
    heardAll(w, heard, feeUpdate(w, 'B', 'A', 1n), feeUpdate(w, 'B', 'F', 2n))
    expect(routesOf(w, heard, 100n)[0]).toEqual({ route: 'BF', fee: 3n })
  })

  test("the node's own channels are taken as they are, not as announced or hinted", async () => {
    const w = await twoWays()
    // A pays B 950 directly: by deposits A-B still shows A's 1000; A knows it has 50 left.
    await w.net.pay('A', 'B', 950n, 1n)
    await w.net.deliverAll()
    const heard: Heard = new Map()
    heardAll(w, heard, capacityUpdate(w, 'B', 'A', { other_capacity: 5000n, updating_capacity: 5000n }))
    expect(routesOf(w, heard, 100n).map((r) => r.route)).toEqual(['CDEF'])
  })

  test('property: no route uses a direction announced below the amount, and every route left out had one', async () => {
    const w = await twoWays()
    const directions = [
      ['B', 'F'],
      ['C', 'D'],
      ['D', 'E'],
      ['E', 'F'],
    ] as const
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...directions), fc.bigInt({ min: 0n, max: 1000n })), { maxLength: 6 }),
        fc.bigInt({ min: 1n, max: 1000n }),
        (claims, amount) => {
          const heard: Heard = new Map()
          const announced = new Map<string, bigint>()
          claims.forEach(([[who, partner], capacity], i) => {
            const update = capacityUpdate(w, who, partner, { updating_nonce: BigInt(i + 1), updating_capacity: capacity })
            if (hear(heard, w.net.node('A').state, update, { now: AFTER, curve: nativeCurve }).outcome === 'accepted') announced.set(who + partner, capacity)
          })
          const routes = routesOf(w, heard, amount).map((r) => r.route)
          const below = (route: string) => ['A', ...route].some((hop, i, all) => i + 1 < all.length && (announced.get(hop + all[i + 1]) ?? amount) < amount)
          for (const route of routes) expect(below(route), route).toBe(false)
          for (const route of ['BF', 'CDEF']) if (!routes.includes(route)) expect(below(route), route).toBe(true)
          expect(heard.size).toBeLessThanOrEqual(directions.length)
        },
      ),
      { numRuns: 80 },
    )
  })
})
