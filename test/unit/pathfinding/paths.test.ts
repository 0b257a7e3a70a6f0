import fc from 'fast-check'
import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { directionCapacity, feeScheduleOf, participantIndex, sameAddress, type PfsChannel } from '../../../src/pathfinding/channel.ts'
import { applyChainEvent } from '../../../src/pathfinding/network.ts'
import { findPaths, type FoundPath, type PathRequest, type PathsResult } from '../../../src/pathfinding/paths.ts'
import type { MediationChannels } from '../../../src/pathfinding/routeFees.ts'
import { flatAndProportionalFee, forwardedAmount, mediatorSchedule } from '../../support/mediationFees.ts'
import { TestNetwork, testNodes, type TestNode } from '../../support/pathfinding.ts'

const nodes = testNodes(12, 3)
const [S, T, A, B, C, D, E, F, H, X, Y, M] = nodes as [
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
  TestNode,
]
const name = new Map(nodes.map((n, i) => [n.address.toLowerCase(), 'STABCDEFHXYM'[i]!]))
// The updates are signed and checked as the service will (headless, with the native secp256k1 binding).

/** A route as letters, to read: 'SABT'. */
const letters = (path: Address[]) => path.map((a) => name.get(a.toLowerCase()) ?? '?').join('')

function routes(net: TestNetwork, request: Partial<PathRequest> & { value: bigint }, offline: TestNode[] = []): PathsResult {
  const down = new Set(offline.map((n) => n.address.toLowerCase()))
  return findPaths(
    net.view,
    { from: S.address, to: T.address, ...request },
    { isOnline: (address) => !down.has(address.toLowerCase()), mediationFee: flatAndProportionalFee },
  )
}
const found = (result: PathsResult) => {
  if (!result.ok) throw new Error(`no route: ${result.error.message}`)
  return result.paths
}

/** What `via` has in its channel with `other`: its schedule there, what it can send, what it can receive. */
function sideOf(net: TestNetwork, via: Address, other: Address) {
  const channel = [...net.view.channels.values()].find(
    (c) => !c.closed && participantIndex(c, via) >= 0 && participantIndex(c, other) >= 0 && !sameAddress(via, other),
  ) as PfsChannel
  const at = participantIndex(channel, via) as 0 | 1
  return { schedule: feeScheduleOf(channel, at), balance: directionCapacity(channel, at), receivable: directionCapacity(channel, (1 - at) as 0 | 1) }
}

/** A mediator's two channels, from what the service was told, as the fee model takes them. */
const mediation = (net: TestNetwork, payer: Address, via: Address, payee: Address): MediationChannels => ({
  payer: sideOf(net, via, payer),
  payee: sideOf(net, via, payee),
})

/**
 * The payment along a route as Raiden's mediators would carry it: the source sends value + estimated fee, each
 * mediator forwards what its fee model leaves (mediator.py get_amount_without_fees). What each took, and what arrived.
 */
function carry(net: TestNetwork, route: FoundPath, value: bigint): { taken: bigint[]; arrived: bigint } {
  let amount = value + route.estimatedFee
  const taken: bigint[] = []
  for (let k = 1; k < route.path.length - 1; k++) {
    const forwarded = forwardedAmount(mediation(net, route.path[k - 1]!, route.path[k]!, route.path[k + 1]!), amount)
    if (forwarded === undefined) throw new Error(`mediator ${k} cannot forward ${amount}`)
    taken.push(amount - forwarded)
    amount = forwarded
  }
  return { taken, arrived: amount }
}

describe('routes that routing by deposits gets wrong', () => {
  test('a drained direction: the deposit is there, the balance is not; the route goes round it', () => {
    const net = new TestNetwork()
    const sa = net.fund(S, A, 100n, 100n)
    net.fund(A, T, 100n, 100n)
    net.fund(S, B, 100n, 100n)
    net.fund(B, C, 100n, 100n)
    net.fund(C, T, 100n, 100n)
    net.pay(sa, S, 95n) // S paid A 95 of its 100: S -> A can carry 5 more
    // A router by deposits sees S's 100 in S-A and takes the shortest route, S A T.
    expect(net.channel(sa).participants[0].deposit).toBe(100n)
    const paths = found(routes(net, { value: 50n }))
    expect(paths.map((p) => letters(p.path))).toEqual(['SBCT'])
    // The way back is not drained: A can still pay S.
    expect(
      found(findPaths(net.view, { from: T.address, to: S.address, value: 50n }, { isOnline: () => true, mediationFee: flatAndProportionalFee }))[0]!
        .path.map((a) => name.get(a.toLowerCase()))
        .join(''),
    ).toBe('TAS')
  })

  test('an offline hub: the short route through it while it is online, the long one without it while it is not', () => {
    const net = new TestNetwork()
    net.fund(S, H, 1_000n, 1_000n)
    net.fund(H, T, 1_000n, 1_000n)
    net.fund(S, X, 100n, 100n)
    net.fund(X, Y, 100n, 100n)
    net.fund(Y, T, 100n, 100n)
    expect(
      found(routes(net, { value: 50n }))[0]!
        .path.map((a) => name.get(a.toLowerCase()))
        .join(''),
    ).toBe('SHT')
    const without = found(routes(net, { value: 50n }, [H]))
    expect(without.map((p) => letters(p.path))).toEqual(['SXYT'])
  })
})

describe('several routes', () => {
  /** S A T (2 hops), S A B T (3 hops, S-A again), S D E F T (4 hops, all its own). */
  function diverse() {
    const net = new TestNetwork()
    for (const [p, q] of [
      [S, A],
      [A, T],
      [A, B],
      [B, T],
      [S, D],
      [D, E],
      [E, F],
      [F, T],
    ] as const)
      net.fund(p, q, 100n, 100n)
    return net
  }

  test('the second route leaves the first one’s channels when it can, though it is longer', () => {
    expect(found(routes(diverse(), { value: 10n, maxPaths: 2 })).map((p) => letters(p.path))).toEqual(['SAT', 'SDEFT'])
    // Without the diversity penalty, the next shortest comes second, through S-A again.
    expect(found(routes(diverse(), { value: 10n, maxPaths: 2, diversityPenalty: 0 })).map((p) => letters(p.path))).toEqual(['SAT', 'SABT'])
  })

  test('up to max_paths routes, each a different simple path; fewer when there are fewer', () => {
    const paths = found(routes(diverse(), { value: 10n, maxPaths: 25 }))
    expect(paths.map((p) => letters(p.path)).sort()).toEqual(['SABT', 'SAT', 'SDEFT'])
    expect(found(routes(diverse(), { value: 10n, maxPaths: 1 }))).toHaveLength(1)
    expect(found(routes(diverse(), { value: 10n }))).toHaveLength(3)
  })
})

describe('fees', () => {
  test("flat fees: each mediator's estimate is its two channels' flat fees, which is what it takes", () => {
    const net = new TestNetwork()
    const channels = [net.fund(S, A, 1_000n, 1_000n), net.fund(A, B, 1_000n, 1_000n), net.fund(B, T, 1_000n, 1_000n)]
    // A asks 10 per mediation (5 per channel), B 30.
    for (const [who, channel, flat] of [
      [A, channels[0]!, 10n],
      [A, channels[1]!, 10n],
      [B, channels[1]!, 30n],
      [B, channels[2]!, 30n],
    ] as const)
      expect(net.setFees(channel, who, mediatorSchedule({ flat })).outcome).toBe('accepted')
    const [route] = found(routes(net, { value: 100n }))
    expect(route).toEqual({ path: [S.address, A.address, B.address, T.address], estimatedFee: 40n, mediatorFees: [10n, 30n] })
    expect(carry(net, route!, 100n)).toEqual({ taken: [10n, 30n], arrived: 100n })
  })

  test('flat and proportional fees (ppm_fee_per_channel): the estimate is what each mediator takes, to the token', () => {
    const net = new TestNetwork()
    const channels = [net.fund(S, A, 10_000n, 10_000n), net.fund(A, B, 10_000n, 10_000n), net.fund(B, T, 10_000n, 10_000n)]
    // A: 2 flat and 1 % per mediation; B: 1 % and 0.3 %.
    const fees = [
      [A, channels[0]!, { flat: 2n, proportional: 10_000n }],
      [A, channels[1]!, { flat: 2n, proportional: 10_000n }],
      [B, channels[1]!, { proportional: 3_000n }],
      [B, channels[2]!, { proportional: 3_000n }],
    ] as const
    for (const [who, channel, fee] of fees) net.setFees(channel, who, mediatorSchedule(fee))
    const [route] = found(routes(net, { value: 1_000n }))
    const { taken, arrived } = carry(net, route!, 1_000n)
    expect(taken).toEqual(route!.mediatorFees)
    expect(arrived).toBe(1_000n)
    // About 1 % of 1,003 plus 2 for A, 0.3 % of 1,000 for B.
    expect(route!.mediatorFees).toEqual([12n, 3n])
  })

  test('property: for any fees and value, each mediator takes what was estimated and the target gets the value', () => {
    const fee = fc.record({ flat: fc.bigInt({ min: 0n, max: 50n }), proportional: fc.bigInt({ min: 0n, max: 50_000n }) })
    fc.assert(
      fc.property(fc.array(fee, { minLength: 1, maxLength: 4 }), fc.bigInt({ min: 1n, max: 100_000n }), (mediatorFees, value) => {
        const net = new TestNetwork()
        const line = [S, ...[A, B, C, D].slice(0, mediatorFees.length), T]
        const channels = line.slice(1).map((to, k) => net.fund(line[k]!, to, 1_000_000n, 1_000_000n))
        mediatorFees.forEach((f, k) => {
          net.setFees(channels[k]!, line[k + 1]!, mediatorSchedule(f))
          net.setFees(channels[k + 1]!, line[k + 1]!, mediatorSchedule(f))
        })
        const [route] = found(routes(net, { value }))
        expect(route!.path).toEqual(line.map((n) => n.address))
        expect(carry(net, route!, value)).toEqual({ taken: route!.mediatorFees, arrived: value })
      }),
      { numRuns: 100 },
    )
  })

  test('the cheaper of two equally long routes comes first', () => {
    const net = new TestNetwork()
    const [sa, at, sb, bt] = [net.fund(S, A, 1_000n, 1_000n), net.fund(A, T, 1_000n, 1_000n), net.fund(S, B, 1_000n, 1_000n), net.fund(B, T, 1_000n, 1_000n)]
    for (const channel of [sa, at]) net.setFees(channel, A, mediatorSchedule({ proportional: 50_000n }))
    for (const channel of [sb, bt]) net.setFees(channel, B, mediatorSchedule({ proportional: 1_000n }))
    expect(found(routes(net, { value: 100n, maxPaths: 2 })).map((p) => letters(p.path))).toEqual(['SBT', 'SAT'])
  })

  test('every channel must carry the value and the fees after it: a first channel with just the value is no route', () => {
    const net = new TestNetwork()
    net.fund(S, A, 100n, 100n) // S -> A carries exactly the value, not its fee too
    const at = net.fund(A, T, 1_000n, 1_000n)
    net.setFees(at, A, mediatorSchedule({ flat: 10n }))
    expect(routes(net, { value: 100n })).toMatchObject({ ok: false, error: { code: 2201, reason: 'no_usable_route' } })
    net.fund(S, B, 200n, 200n)
    net.fund(B, T, 200n, 200n)
    expect(found(routes(net, { value: 100n })).map((p) => letters(p.path))).toEqual(['SBT'])
    // 90 leaves room for A's fee: S A T is a route again, after the one without fees.
    expect(found(routes(net, { value: 90n })).map((p) => letters(p.path))).toEqual(['SBT', 'SAT'])
  })

  test('the search checks what each channel carries itself, whatever the fee model checks', () => {
    const net = new TestNetwork()
    net.fund(S, A, 100n, 100n)
    net.fund(A, T, 1_000n, 1_000n)
    // A fee of 10 from a model that looks at no capacity: S -> A would have to carry 110.
    const flatTen = () => 10n
    const result = findPaths(net.view, { from: S.address, to: T.address, value: 100n }, { isOnline: () => true, mediationFee: flatTen })
    expect(result).toMatchObject({ ok: false, error: { reason: 'no_usable_route' } })
    expect(found(findPaths(net.view, { from: S.address, to: T.address, value: 90n }, { isOnline: () => true, mediationFee: flatTen }))).toEqual([
      { path: [S.address, A.address, T.address], estimatedFee: 10n, mediatorFees: [10n] },
    ])
  })
})

describe('lock timeouts', () => {
  test('a mediator whose reveal timeout is not below the lock timeout is gone round; a longer lock timeout asked for lets it in', () => {
    const net = new TestNetwork()
    net.fund(S, M, 100n, 100n)
    // M keeps 120 blocks on its channel to T: more than the 100 of a lock twice S's 50.
    net.fund(M, T, 100n, 100n, { revealTimeouts: [120n, 50n] })
    net.fund(S, X, 100n, 100n)
    net.fund(X, Y, 100n, 100n)
    net.fund(Y, T, 100n, 100n)
    expect(found(routes(net, { value: 10n })).map((p) => letters(p.path))).toEqual(['SXYT'])
    expect(found(routes(net, { value: 10n, lockTimeout: 121n })).map((p) => letters(p.path))).toEqual(['SMT', 'SXYT'])
  })

  test('a lock longer than a channel’s settle timeout is no route through that channel', () => {
    const net = new TestNetwork()
    net.fund(S, A, 100n, 100n)
    net.fund(A, T, 100n, 100n, { settleTimeout: 99n })
    expect(routes(net, { value: 10n })).toMatchObject({ ok: false, error: { reason: 'no_usable_route' } })
    expect(found(routes(net, { value: 10n, lockTimeout: 99n })).map((p) => letters(p.path))).toEqual(['SAT'])
  })

  test("each route's lock is twice the source's reveal timeout on its own first channel", () => {
    const net = new TestNetwork()
    net.fund(S, A, 100n, 100n, { revealTimeouts: [20n, 20n] }) // a lock of 40 blocks
    net.fund(A, T, 100n, 100n, { settleTimeout: 99n, revealTimeouts: [20n, 20n] })
    net.fund(S, B, 100n, 100n) // a lock of 100 blocks: more than B-T's settle timeout
    net.fund(B, T, 100n, 100n, { settleTimeout: 99n })
    expect(found(routes(net, { value: 10n })).map((p) => letters(p.path))).toEqual(['SAT'])
  })
})

describe("raiden-services' error cases", () => {
  function small() {
    const net = new TestNetwork()
    net.fund(S, A, 100n, 5n)
    net.fund(A, T, 100n, 100n)
    net.fund(B, C, 100n, 100n)
    return net
  }
  const noRoute = (reason: string, message: string | RegExp) => ({
    ok: false,
    error: { name: 'NoRouteFound', code: 2201, reason, message: typeof message === 'string' ? message : expect.stringMatching(message) },
  })

  test('each reason, in the order raiden-services checks them, with its NoRouteFound code', () => {
    const net = small()
    expect(routes(net, { value: 10n }, [S, T])).toEqual(noRoute('source_offline', 'Source not online'))
    expect(routes(net, { value: 10n }, [T])).toEqual(noRoute('target_offline', 'Target not online'))
    expect(routes(net, { value: 10n, from: D.address })).toEqual(noRoute('no_channel_from_source', 'No channel from source'))
    expect(routes(net, { value: 10n, to: D.address })).toEqual(noRoute('no_channel_to_target', 'No channel to target'))
    expect(routes(net, { value: 101n })).toEqual(noRoute('source_capacity', /largest: 100 < requested amount: 101/))
    expect(routes(net, { value: 10n, from: T.address, to: S.address })).toEqual(noRoute('target_capacity', /largest: 5 < 10/))
    expect(routes(net, { value: 10n, to: C.address })).toEqual(noRoute('not_connected', 'No route from source to target'))
    expect(routes(net, { value: 10n }, [A])).toEqual(noRoute('no_usable_route', 'No route between nodes found.'))
    expect(found(routes(net, { value: 10n })).map((p) => letters(p.path))).toEqual(['SAT'])
  })

  test('a closed channel is no channel', () => {
    const net = new TestNetwork()
    const sa = net.fund(S, A, 100n, 100n)
    net.fund(A, T, 100n, 100n)
    expect(routes(net, { value: 10n }).ok).toBe(true)
    applyChainEvent(net.state, {
      type: 'channelClosed',
      tokenNetwork: net.tokenNetwork,
      channelId: sa,
      closer: A.address,
      nonce: 0n,
      balanceHash: '0x00',
      blockNumber: 9n,
    })
    expect(routes(net, { value: 10n })).toMatchObject({ ok: false, error: { reason: 'no_channel_from_source' } })
  })

  test('a request raiden-services would refuse, or one that would make weights negative, is an InvalidRequest', () => {
    const net = small()
    const invalid = { ok: false, error: { name: 'InvalidRequest', code: 2000, message: expect.any(String) } }
    expect(routes(net, { value: 0n })).toEqual(invalid)
    expect(routes(net, { value: 10n, maxPaths: 26 })).toEqual(invalid)
    expect(routes(net, { value: 10n, maxPaths: 0 })).toEqual(invalid)
    expect(routes(net, { value: 10n, diversityPenalty: -1 })).toEqual(invalid)
    expect(routes(net, { value: 10n, feePenalty: Number.NaN })).toEqual(invalid)
    expect(routes(net, { value: 10n, to: S.address })).toEqual(invalid)
  })
})

/**
 * The whole search against brute force on small networks: every simple path tried, each judged by the rules written
 * out again here. A route is found whenever one exists, and every route found is one.
 */
test('property: a route is found exactly when one exists, and every route found can carry the payment', () => {
  const pool = [S, T, A, B, C, D]
  const channelArb = fc.record({
    p: fc.nat(5),
    q: fc.nat(5),
    balances: fc.tuple(fc.bigInt({ min: 0n, max: 60n }), fc.bigInt({ min: 0n, max: 60n })),
    revealTimeouts: fc.tuple(fc.constantFrom(20n, 40n, 50n, 80n), fc.constantFrom(20n, 40n, 50n, 80n)),
    // Locks are 40, 80, 100 or 160 blocks: equal to some of these timeouts, to try the bounds.
    settleTimeout: fc.constantFrom(80n, 99n, 100n, 200n),
    flat: fc.tuple(fc.bigInt({ min: 0n, max: 6n }), fc.bigInt({ min: 0n, max: 6n })),
  })
  fc.assert(
    fc.property(fc.array(channelArb, { maxLength: 9 }), fc.bigInt({ min: 1n, max: 40n }), fc.subarray([2, 3, 4, 5]), (channels, value, offlineIx) => {
      const net = new TestNetwork()
      const pairs = new Set<string>()
      for (const c of channels) {
        const key = [Math.min(c.p, c.q), Math.max(c.p, c.q)].join('-')
        if (c.p === c.q || pairs.has(key)) continue
        pairs.add(key)
        const id = net.fund(pool[c.p]!, pool[c.q]!, c.balances[0], c.balances[1], { revealTimeouts: c.revealTimeouts, settleTimeout: c.settleTimeout })
        net.setFees(id, pool[c.p]!, { cap_fees: true, flat: c.flat[0], proportional: 0n, imbalance_penalty: null })
        net.setFees(id, pool[c.q]!, { cap_fees: true, flat: c.flat[1], proportional: 0n, imbalance_penalty: null })
      }
      const offline = new Set(offlineIx.map((i) => pool[i]!.address.toLowerCase()))
      const result = findPaths(
        net.view,
        { from: S.address, to: T.address, value, maxPaths: 25 },
        { isOnline: (address) => !offline.has(address.toLowerCase()), mediationFee: flatAndProportionalFee, maxCandidates: 1_000 },
      )
      const valid = bruteForce(net, value, offline)
      const foundKeys = result.ok ? result.paths.map((p) => letters(p.path)) : []
      if (valid.size === 0) expect(result.ok).toBe(false)
      else expect(foundKeys.length).toBeGreaterThan(0)
      for (const key of foundKeys) expect(valid.has(key)).toBe(true)
      expect(new Set(foundKeys).size).toBe(foundKeys.length)
      if (result.ok) for (const route of result.paths) expect(route.estimatedFee).toBe(valid.get(letters(route.path)))
    }),
    { numRuns: 300 },
  )
})

/**
 * Every valid route S -> T with its estimated fee, tried one simple path at a time: all nodes online; a lock of
 * twice S's reveal timeout on its first channel within every settle timeout and above every reveal timeout on the
 * way; each mediator's fee (the fee model, backwards from T); each channel carrying what goes through it.
 */
function bruteForce(net: TestNetwork, value: bigint, offline: Set<string>): Map<string, bigint> {
  const valid = new Map<string, bigint>()
  const open = [...net.view.channels.values()].filter((c) => !c.closed)
  const between = (p: Address, q: Address) => open.find((c) => participantIndex(c, p) >= 0 && participantIndex(c, q) >= 0)!
  const walk = (path: Address[]) => {
    const last = path.at(-1)!
    if (sameAddress(last, T.address)) {
      const links = path.slice(1).map((q, k) => ({ channel: between(path[k]!, q), from: path[k]! }))
      const lock = 2n * links[0]!.channel.participants[participantIndex(links[0]!.channel, path[0]!) as 0 | 1].capacityUpdate!.reveal_timeout
      for (const { channel } of links) {
        if (lock > channel.settleTimeout) return
        if (channel.participants.some((p) => p.capacityUpdate!.reveal_timeout >= lock)) return
      }
      let amount = value
      let total = 0n
      for (let k = links.length - 1; k >= 0; k--) {
        const { channel, from } = links[k]!
        if (directionCapacity(channel, participantIndex(channel, from) as 0 | 1) < amount) return
        if (k > 0) {
          const fee = flatAndProportionalFee(mediation(net, path[k - 1]!, from, path[k + 1]!), amount)
          if (fee === undefined) return
          amount += fee
          total += fee
        }
      }
      valid.set(letters(path), total)
      return
    }
    for (const c of open) {
      const at = participantIndex(c, last)
      if (at < 0) continue
      const next = c.participants[1 - at]!.address
      if (offline.has(next.toLowerCase()) || path.some((p) => sameAddress(p, next))) continue
      walk([...path, next])
    }
  }
  walk([S.address])
  return valid
}
