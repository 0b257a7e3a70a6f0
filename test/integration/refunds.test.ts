import { createTestClient, http } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { depositOnChain, openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'

/**
 * Payments that a hop cannot forward, on a chain that mines no block once the channels are open (as the devnet's
 * anvil does when nobody sends a transaction): each must end within seconds, paid over a route that holds it or
 * failed with a reason that says why, never wait for a lock to expire.
 */

/** Stops anvil from mining: from now on no block comes, as on an idle devnet. */
async function stopMining(net: Devnet) {
  await createTestClient({ mode: 'anvil', transport: http(net.anvil.rpcUrl) }).setAutomine(false)
}

const head = (node: SluiceNode) => node.client.chain.publicClient.getBlockNumber({ cacheTime: 0 })

/**
 * A payment refused with a reason (409): by the initiator's core once it tried the routes (PaymentFailedError), or
 * before it starts when the runtime asks findRoutes for routes that hold the lock (NoRouteError).
 */
const refusals = ['PaymentFailedError', 'NoRouteError']

/** Runs a payment and returns how it ended and how long it took. */
async function timed<T>(payment: Promise<T>): Promise<{ ms: number; result?: T; error?: Error }> {
  const t0 = performance.now()
  try {
    const result = await payment
    return { ms: performance.now() - t0, result }
  } catch (error) {
    return { ms: performance.now() - t0, error: error as Error }
  }
}

describe("a new user (reveal timeout 50: 100-block locks) pays over the devnet's channels (settle timeout 40), no block mined", () => {
  const [keyN, keyB, keyC, keyM] = [anvilKeys[1], anvilKeys[2], anvilKeys[3], anvilKeys[4]]
  let net: Devnet
  let n: SluiceNode
  let b: SluiceNode
  let c: SluiceNode
  let m: SluiceNode

  beforeAll(async () => {
    net = await startDevnet([keyN, keyB, keyC, keyM])
    // N and M run `sluice serve`'s defaults (reveal 50, settle 500); B and C are devnet nodes (reveal 10, settle 40).
    const newUser = { defaultRevealTimeout: 50, defaultSettleTimeout: 500 }
    ;[n, b, c, m] = await Promise.all([startNode(net, keyN, newUser), startNode(net, keyB), startNode(net, keyC), startNode(net, keyM, newUser)])
    // N opened its own channel into the devnet (settle 500); B opened one to M (settle 40), which M funded.
    await openChannelOnChain(n.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 1000n })
    await openChannelOnChain(b.client, { tokenNetwork: net.tokenNetwork, partner: c.address, totalDeposit: 1000n })
    await openChannelOnChain(b.client, { tokenNetwork: net.tokenNetwork, partner: m.address })
    await m.client.waitForBlock(await head(b))
    await depositOnChain(m.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 1000n })
    const block = await head(n)
    await Promise.all([n, b, c, m].map((x) => x.client.waitForBlock(block)))
    expect(n.client.channel(net.tokenNetwork, b.address)).toMatchObject({ settleTimeout: 500n, revealTimeout: 50n })
    expect(m.client.channel(net.tokenNetwork, b.address)).toMatchObject({ settleTimeout: 40n, revealTimeout: 50n })
    expect(b.client.channel(net.tokenNetwork, c.address)).toMatchObject({ settleTimeout: 40n })
    await stopMining(net)
  }, 90_000)

  afterAll(async () => {
    await Promise.all([n, b, c, m].map((x) => x?.stop()))
    await net?.stop()
  })

  test('the payment fails at once, saying the lock timeout exceeds the settle timeout of the channel B-C', async () => {
    const before = await head(n)
    const { ms, error } = await timed(sendPayment(n.client, { token: net.token, target: c.address, amount: 7n }))
    expect(refusals).toContain(error?.name)
    expect(error?.message).toContain(
      `the lock timeout 100 (twice the reveal timeout 50 of our channel with ${b.address}) exceeds the settle timeout 40 of the channel between ${b.address} and ${c.address}`,
    )
    expect(ms).toBeLessThan(5_000)
    expect(await head(n)).toBe(before)
    // Nothing was locked: B never got a lock it could not forward.
    expect(n.client.channel(net.tokenNetwork, b.address)!.our.locks).toEqual([])
    expect(b.state.mediators).toEqual({})
  })

  test('over a first channel that settles in 40 too, the payment fails at once, saying so', async () => {
    const before = await head(m)
    const { ms, error } = await timed(sendPayment(m.client, { token: net.token, target: c.address, amount: 7n }))
    expect(refusals).toContain(error?.name)
    expect(error?.message).toContain(
      `the lock timeout 100 (twice the reveal timeout 50 of our channel with ${b.address}) exceeds the settle timeout 40 of our channel with ${b.address}`,
    )
    expect(ms).toBeLessThan(5_000)
    expect(await head(m)).toBe(before)
  })

  test("a lock_timeout of 40, which the devnet's channels would hold, is refused at once: it must exceed our reveal timeout (50)", async () => {
    const { ms, error } = await timed(sendPayment(n.client, { token: net.token, target: c.address, amount: 7n, lockTimeout: 40n }))
    expect(error).toBeDefined()
    expect(error?.message).toMatch(/lock_timeout 40|reveal timeout/)
    expect(ms).toBeLessThan(5_000)
  })

  test('a direct payment to B, whose channel holds the lock, still goes through without a block', async () => {
    const before = await head(n)
    const { ms, result, error } = await timed(sendPayment(n.client, { token: net.token, target: b.address, amount: 3n }))
    expect(error).toBeUndefined()
    expect(result?.amount).toBe(3n)
    expect(ms).toBeLessThan(5_000)
    expect(await head(n)).toBe(before)
  })
})

describe('a hop without the balance to forward gives the lock back at once, no block mined', () => {
  const [keyA, keyB, keyC, keyD] = [anvilKeys[1], anvilKeys[2], anvilKeys[3], anvilKeys[4]]
  let net: Devnet
  let a: SluiceNode
  let b: SluiceNode
  let c: SluiceNode
  let d: SluiceNode

  beforeAll(async () => {
    net = await startDevnet([keyA, keyB, keyC, keyD])
    // B, C and D announce nothing (docs/decisions/0074): A routes by deposits, and meets the refunds.
    const quiet = { routingMode: 'private' } as const
    ;[a, b, c, d] = await Promise.all([startNode(net, keyA), startNode(net, keyB, quiet), startNode(net, keyC, quiet), startNode(net, keyD, quiet)])
    // A-B-C and A-D-C; B and D also put in towards A (as the devnet's channels have deposits on both sides), so
    // each can give a lock back to A.
    await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 1000n })
    await openChannelOnChain(b.client, { tokenNetwork: net.tokenNetwork, partner: c.address, totalDeposit: 1000n })
    await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: d.address, totalDeposit: 1000n })
    await openChannelOnChain(d.client, { tokenNetwork: net.tokenNetwork, partner: c.address, totalDeposit: 1000n })
    await b.client.waitForBlock(await head(a))
    await depositOnChain(b.client, { tokenNetwork: net.tokenNetwork, partner: a.address, totalDeposit: 100n })
    await d.client.waitForBlock(await head(b))
    await depositOnChain(d.client, { tokenNetwork: net.tokenNetwork, partner: a.address, totalDeposit: 100n })
    const block = await head(a)
    await Promise.all([a, b, c, d].map((x) => x.client.waitForBlock(block)))
    await stopMining(net)
    // B spends almost all it has towards C: the chain still shows its deposit of 1000, so A routes over B.
    await sendPayment(b.client, { token: net.token, target: c.address, amount: 995n })
  }, 120_000)

  afterAll(async () => {
    await Promise.all([a, b, c, d].map((x) => x?.stop()))
    await net?.stop()
  })

  test('B refunds A at once and A pays over D instead', async () => {
    const before = await head(a)
    const route = a.notices.next((e) => e.type === 'paymentSentSuccess')
    const { ms, result, error } = await timed(sendPayment(a.client, { token: net.token, target: c.address, amount: 10n }))
    expect(error).toBeUndefined()
    expect(result?.amount).toBe(10n)
    expect(await route).toMatchObject({ route: [d.address, c.address] })
    expect(ms).toBeLessThan(5_000)
    expect(await head(a)).toBe(before)
    // The refunded pair of locks between A and B waits for its expiry; the payment did not.
    expect(a.client.channel(net.tokenNetwork, b.address)!.our.locks).toHaveLength(1)
    expect(a.client.channel(net.tokenNetwork, b.address)!.partnerEnd.locks).toHaveLength(1)
  })

  test('when D cannot forward either, the payment fails at once, naming both hops that refunded it', async () => {
    await sendPayment(d.client, { token: net.token, target: c.address, amount: 990n })
    const before = await head(a)
    const { ms, error } = await timed(sendPayment(a.client, { token: net.token, target: c.address, amount: 10n }))
    expect(refusals).toContain(error?.name)
    expect(error?.message).toMatch(/no route could carry the payment: /)
    expect(error?.message).toContain(`${b.address} refunded it`)
    expect(error?.message).toContain(`${d.address} refunded it`)
    expect(ms).toBeLessThan(5_000)
    expect(await head(a)).toBe(before)
  })
})
