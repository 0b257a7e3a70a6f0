import { sha256 } from 'viem'
import { describe, expect, test } from 'vitest'
import { decodeMessage, encodeMessage, signMessage } from '../../../../src/protocol/messages/index.ts'
import type { LockedTransfer, RefundTransfer, RevealSecret, SecretRequest, Signed } from '../../../../src/protocol/messages/types.ts'
import { MAX_METADATA_BYTES } from '../../../../src/protocol/messages/wire.ts'
import { routeMetadata } from '../../../../src/protocol/transfer/initiator.ts'
import type { NodeEvent } from '../../../../src/protocol/state/effects.ts'
import { Network } from '../support/network.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const reason = (e: NodeEvent | undefined) => (e && 'reason' in e ? e.reason : undefined)
const revealed = (net: Network, name: string) =>
  net
    .node(name)
    .sent.filter((s) => s.message.type === 'RevealSecret')
    .map((s) => (s.message as RevealSecret).secret)

/** A-B-C where B can give a lock back to A but cannot forward it to C (too little balance), and A-D-C that can carry it. */
async function twoRoutes() {
  const net = new Network(['A', 'B', 'C', 'D'])
  await net.open('A', 'B', 100n, 50n)
  await net.open('B', 'C', 5n, 0n)
  await net.open('A', 'D', 100n, 0n)
  await net.open('D', 'C', 100n, 0n)
  return net
}

describe('initiator, when a hop refunds its lock', () => {
  test('tries the next route at once with a fresh secret, and never reveals the first one', async () => {
    const net = await twoRoutes()
    const start = net.chain.block
    const first = await net.pay('A', 'C', 20n, 1n, [
      ['B', 'C'],
      ['D', 'C'],
    ])
    await net.deliverAll()
    expect(net.chain.block).toBe(start)
    const [outcome] = net.outcomes('A', 1n)
    expect(outcome).toMatchObject({ type: 'paymentSentSuccess', route: [net.node('D').address, net.node('C').address] })
    const paid = (outcome as Extract<NodeEvent, { type: 'paymentSentSuccess' }>).secrethash
    expect(paid).not.toBe(first)
    expect(revealed(net, 'A').map((s) => sha256(s))).toEqual([paid])
    // The refunded attempt stays, failed, until its lock expires; then A takes the lock back.
    expect(net.node('A').state.initiators[first]).toMatchObject({ status: 'failed', failedRoutes: [expect.stringMatching(/refunded it/)] })
    await net.mine(40)
    await net.deliverAll()
    expect(net.node('A').state.initiators).toEqual({})
    expect(net.outcomes('A', 1n)).toHaveLength(1)
    expect(net.violations).toEqual([])
  })

  test('fails at once, saying who refunded, when no route is left', async () => {
    const net = await twoRoutes()
    const start = net.chain.block
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    await net.deliverAll()
    expect(net.chain.block).toBe(start)
    const b = net.node('B').address
    const c = net.node('C').address
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentFailed' }])
    expect(reason(net.outcomes('A', 1n)[0])).toBe(`no route could carry the payment: ${b} refunded it, unable to forward the lock (route ${b}, ${c})`)
  })

  test('lists every route it tried when the next route is refunded too', async () => {
    const net = new Network(['A', 'B', 'C', 'D'])
    await net.open('A', 'B', 100n, 50n)
    await net.open('B', 'C', 5n, 0n)
    await net.open('A', 'D', 100n, 50n)
    await net.open('D', 'C', 5n, 0n)
    await net.pay('A', 'C', 20n, 1n, [
      ['B', 'C'],
      ['D', 'C'],
    ])
    await net.deliverAll()
    const why = reason(net.outcomes('A', 1n)[0])
    expect(why).toMatch(new RegExp(`^no route could carry the payment: ${net.node('B').address} refunded it.*; ${net.node('D').address} refunded it`))
    expect(net.outcomes('A', 1n)).toHaveLength(1)
  })

  test("with the caller's secret, a refund ends the payment: a secret is never sent over two routes", async () => {
    const net = await twoRoutes()
    const secret = sha256('0x01')
    const at = (n: string) => net.node(n).address
    await net.dispatch('A', {
      type: 'initPayment',
      tokenNetwork: net.chain.tokenNetwork,
      target: at('C'),
      amount: 20n,
      paymentId: 1n,
      secret,
      secrethash: sha256(secret),
      ownSecret: false,
      routes: [
        [at('B'), at('C')],
        [at('D'), at('C')],
      ],
      freshSecrets: [],
    })
    await net.deliverAll()
    expect(reason(net.outcomes('A', 1n)[0])).toMatch(/refunded it.*the other routes were not tried: the payment secret was given by the caller/)
    expect(net.node('D').sent).toEqual([])
  })

  test('a refund that does not match the lock we sent is ignored', async () => {
    const net = await twoRoutes()
    const h = await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    expect(await net.deliverMessage('A', 'B', 'LockedTransfer')).toBe(true)
    const entry = net.inFlight.find((m) => m.from === 'B' && m.to === 'A' && m.text.includes('RefundTransfer'))!
    const { message } = await decodeMessage(jsSecp256k1, entry.text, net.node('B').address)
    entry.text = encodeMessage(await signMessage(jsSecp256k1, net.node('B').key, { ...(message as RefundTransfer), payment_identifier: 2n }))
    await net.deliverAll()
    expect(net.outcomes('A', 1n)).toEqual([])
    expect(net.node('A').state.initiators[h]).toMatchObject({ status: 'pending' })
    // The refund lock itself was applied (the nonces stay in step); the payment ends at its lock's expiry.
    expect(net.node('A').state.channels[net.node('A').state.initiators[h]!.channelKey]!.partnerEnd.locks).toHaveLength(1)
  })

  test('once the target asked for the secret, a refund does not end the payment', async () => {
    const net = await twoRoutes()
    const h = await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    const lock = net.node('A').state.initiators[h]!.lock
    const request: SecretRequest = {
      type: 'SecretRequest',
      message_identifier: 77n,
      payment_identifier: 1n,
      secrethash: h,
      amount: 20n,
      expiration: lock.expiration,
    }
    await net.dispatch('A', { type: 'receive', message: await signMessage(jsSecp256k1, net.node('C').key, request), sender: net.node('C').address })
    expect(revealed(net, 'A')).toHaveLength(1)
    await net.deliverAll()
    expect(net.node('B').sent.map((s) => s.message.type)).toContain('RefundTransfer')
    expect(net.outcomes('A', 1n)).toEqual([])
    expect(net.node('A').state.initiators[h]).toMatchObject({ status: 'pending' })
  })
})

describe('initiator, before it sends a lock', () => {
  /** A new user's node (reveal 50: a 100-block lock, channels settling in 500) next to a devnet (settle 40). */
  async function newUser(bcSettle = 40n) {
    const net = new Network(['A', 'B', 'C', 'D'])
    await net.open('A', 'B', 100n, 0n, 500n, 50n)
    await net.open('B', 'C', 100n, 0n, bcSettle, 10n)
    await net.open('A', 'D', 100n, 0n, 500n, 50n)
    await net.open('D', 'C', 100n, 0n, 200n, 10n)
    return net
  }

  test('skips a route with a channel whose settle timeout is shorter than the lock timeout, and takes one that holds it', async () => {
    const net = await newUser()
    await net.pay('A', 'C', 20n, 1n, [
      ['B', 'C'],
      ['D', 'C'],
    ])
    expect(net.node('B').sent).toEqual([])
    expect(net.inFlight.filter((m) => m.from === 'A').map((m) => m.to)).toEqual(['D'])
    await net.deliverAll()
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentSuccess', route: [net.node('D').address, net.node('C').address] }])
  })

  test('fails at once, saying which settle timeout the lock timeout exceeds, when no route can hold the lock', async () => {
    const net = await newUser()
    const [b, c] = ['B', 'C'].map((n) => net.node(n).address)
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    expect(net.inFlight).toEqual([])
    expect(reason(net.outcomes('A', 1n)[0])).toBe(
      `no route could carry the payment: via ${b}, ${c}: the lock timeout 100 (twice the reveal timeout 50 of our channel with ${b}) exceeds the settle timeout 40 of the channel between ${b} and ${c} (no lock timeout fits this route unless the reveal timeout of our channel with ${b} is at most 38)`,
    )
  })

  test('names the lock timeouts that would fit, when some would', async () => {
    const net = await newUser(80n)
    await net.pay('A', 'C', 20n, 1n, [['B', 'C']])
    expect(reason(net.outcomes('A', 1n)[0])).toMatch(
      /exceeds the settle timeout 80 of the channel between .* \(a lock timeout from 52 to 80 fits this route\)$/,
    )
    await net.pay('A', 'C', 20n, 2n, [['B', 'C']], 80n)
    await net.deliverAll()
    expect(net.outcomes('A', 2n)).toMatchObject([{ type: 'paymentSentSuccess' }])
  })

  test('refuses a lock timeout that would reach the first hop inside its reveal timeout (its payee would never ask for the secret)', async () => {
    const net = new Network(['A', 'B'])
    await net.open('A', 'B', 100n, 0n, 100n, 10n)
    await net.pay('A', 'B', 5n, 1n, undefined, 11n)
    expect(net.inFlight).toEqual([])
    expect(reason(net.outcomes('A', 1n)[0])).toMatch(
      /the lock timeout 11 leaves 10 blocks, not more than the reveal timeout 10 of our channel with 0x[0-9a-fA-F]{40} \(a lock timeout from 12 to 100 fits this route\)/,
    )
    await net.pay('A', 'B', 5n, 2n, undefined, 12n)
    await net.deliverAll()
    expect(net.outcomes('A', 2n)).toMatchObject([{ type: 'paymentSentSuccess' }])
  })
})

describe("initiator, with a pathfinding service's records of the route's nodes (docs/decisions/0073)", () => {
  /** A record under Raiden's names; the core only carries it (the shell checked it). */
  const record = (name: string, size = 1) => ({ user_id: `peer-of-${name}`, displayname: `sig-of-${name}`, capabilities: `${name}`.repeat(size) })
  const lockedTransfers = (net: Network, name: string) =>
    net
      .node(name)
      .sent.filter((s) => s.message.type === 'LockedTransfer')
      .map((s) => s.message as Signed<LockedTransfer>)

  test("each route's LockedTransfer carries its own nodes' records as Raiden's address_metadata, the next route after a refund its own; every hop forwards it unchanged and the target is paid", async () => {
    const net = await twoRoutes()
    const [a, b, c, d] = ['A', 'B', 'C', 'D'].map((n) => net.node(n).address)
    const viaB = { [a!]: record('A'), [b!]: record('B'), [c!]: record('C') }
    const viaD = { [d!]: record('D'), [c!]: record('C') }
    await net.pay(
      'A',
      'C',
      20n,
      1n,
      [
        ['B', 'C'],
        ['D', 'C'],
      ],
      undefined,
      { routeMetadata: [viaB, viaD] },
    )
    await net.deliverAll()
    expect(net.outcomes('A', 1n)).toMatchObject([{ type: 'paymentSentSuccess', route: [d, c] }])
    const [first, second] = lockedTransfers(net, 'A')
    expect(first!.metadata.routes).toEqual([{ route: [a, b, c], address_metadata: viaB }])
    expect(second!.metadata.routes).toEqual([{ route: [a, d, c], address_metadata: viaD }])
    // D forwarded the metadata A signed, byte for byte as far as its hash goes: C took the lock and was paid.
    expect(lockedTransfers(net, 'D')[0]!.metadata).toEqual(second!.metadata)
    expect(net.node('C').events.filter((e) => e.type === 'paymentReceivedSuccess')).toHaveLength(1)
    expect(net.violations).toEqual([])
  })

  test('records that would make the metadata larger than a receiver takes are left out: the route and the secret still go', async () => {
    const [a, b] = ['0x1111111111111111111111111111111111111111', '0x2222222222222222222222222222222222222222'] as const
    const secret = `0x${'ab'.repeat(200)}` as const
    const small = { [b]: record('B') }
    expect(routeMetadata([a, b], small, secret)).toEqual({ routes: [{ route: [a, b], address_metadata: small }], secret })
    const large = { [a]: record('A', 8_000), [b]: record('B', 8_000) }
    expect(routeMetadata([a, b], large, secret)).toEqual({ routes: [{ route: [a, b] }], secret })
    // None, or an empty set: no address_metadata, as raiden-ts writes it.
    expect(routeMetadata([a, b], {}, undefined)).toEqual({ routes: [{ route: [a, b] }] })
    expect(JSON.stringify(routeMetadata([a, b], { [a]: record('A', 7_000) }, secret)).length).toBeLessThanOrEqual(MAX_METADATA_BYTES)
  })
})
