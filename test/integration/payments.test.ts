import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { balance } from '../../src/protocol/channel/amounts.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'

const [keyA, keyB, keyC] = [anvilKeys[1], anvilKeys[2], anvilKeys[3]]
let net: Devnet
let a: SluiceNode
let b: SluiceNode
let c: SluiceNode

beforeAll(async () => {
  net = await startDevnet([keyA, keyB, keyC])
  ;[a, b, c] = await Promise.all([startNode(net, keyA), startNode(net, keyB), startNode(net, keyC)])
  await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 5000n })
  await openChannelOnChain(b.client, { tokenNetwork: net.tokenNetwork, partner: c.address, totalDeposit: 1000n })
  // Every node syncs every channel (the graph is public) before routing over it.
  const head = await a.client.chain.publicClient.getBlockNumber()
  await Promise.all([a, b, c].map((n) => n.client.waitForBlock(head)))
}, 60_000)

afterAll(async () => {
  await Promise.all([a, b, c].map((n) => n?.stop()))
  await net?.stop()
})

const own = (n: SluiceNode, partner: SluiceNode) => {
  const ch = n.client.channel(net.tokenNetwork, partner.address)!
  return balance(ch.our, ch.partnerEnd)
}

describe('three nodes on anvil (A-B, B-C)', () => {
  test('a direct payment A→B', async () => {
    const result = await sendPayment(a.client, { token: net.token, target: b.address, amount: 10n })
    expect(result.amount).toBe(10n)
    await eventually(() => expect(own(b, a)).toBe(10n))
    expect(own(a, b)).toBe(4990n)
  })

  test('a mediated payment A→B→C', async () => {
    const route = a.notices.next((e) => e.type === 'paymentSentSuccess')
    await sendPayment(a.client, { token: net.token, target: c.address, amount: 7n })
    expect(await route).toMatchObject({ route: [b.address, c.address] })
    await eventually(() => expect(own(c, b)).toBe(7n))
    expect(own(b, c)).toBe(993n)
  })

  test('1,000 concurrent payments A→B all succeed and move exactly their sum', async () => {
    const before = own(a, b)
    const t0 = performance.now()
    const results = await Promise.allSettled(Array.from({ length: 1000 }, () => sendPayment(a.client, { token: net.token, target: b.address, amount: 1n })))
    const failed = results.filter((r) => r.status === 'rejected')
    expect(failed.map((f) => String((f as PromiseRejectedResult).reason)).slice(0, 3)).toEqual([])
    console.log(`1,000 concurrent direct payments in ${Math.round(performance.now() - t0)} ms`)
    expect(own(a, b)).toBe(before - 1000n)
    await eventually(() => expect(own(b, a)).toBe(1000n + 10n + 7n)) // the 7 of the mediated payment stayed with B on this side
    const ab = a.client.channel(net.tokenNetwork, b.address)!
    expect(ab.our.locks).toEqual([])
  }, 120_000)
})
