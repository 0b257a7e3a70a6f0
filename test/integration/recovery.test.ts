import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { balance } from '../../src/protocol/channel/amounts.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'

const [keyA, keyB] = [anvilKeys[6], anvilKeys[7]]
let net: Devnet
let a: SluiceNode
let b: SluiceNode

beforeAll(async () => {
  net = await startDevnet([keyA, keyB], 1000n)
  ;[a, b] = await Promise.all([startNode(net, keyA, { durable: true }), startNode(net, keyB, { durable: true })])
  await a.openChannel({ tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 500n })
  await b.waitForBlock(await a.chain.publicClient.getBlockNumber())
}, 60_000)

afterAll(async () => {
  await Promise.all([a, b].map((n) => n?.stop()))
  await net?.stop()
})

const mine = (blocks: number) => createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] }).mine({ blocks })
const ab = () => a.channel(net.tokenNetwork, b.address)!
const ba = () => b.channel(net.tokenNetwork, a.address)!

describe('recovery with durable storage (LevelDB)', () => {
  test('the target is offline: the lock expires, the funds come back, and the target catches up when it returns', async () => {
    await b.stop()
    const paying = a.pay({ tokenNetwork: net.tokenNetwork, target: b.address, amount: 30n }).catch((e: Error) => e)
    await eventually(() => expect(ab().our.locks).toHaveLength(1))
    expect(balance(ab().our, ab().partnerEnd)).toBe(500n)
    await mine(25) // past the expiration (lock timeout 20 blocks) and the wait before LockExpired
    const outcome = await paying
    expect(outcome).toBeInstanceOf(Error)
    expect(String(outcome)).toMatch(/lock expired/)
    await eventually(() => expect(ab().our.locks).toEqual([]))
    expect(balance(ab().our, ab().partnerEnd)).toBe(500n)
    // B comes back from its store: A's LockedTransfer and LockExpired reach it in order, and both agree.
    b = await startNode(net, keyB, { durable: true })
    await eventually(() => expect(ba().partnerEnd.nonce).toBe(ab().our.nonce))
    expect(ba().partnerEnd.locks).toEqual([])
    expect(balance(ba().our, ba().partnerEnd)).toBe(0n)
  }, 60_000)

  test('a node stopped in the middle of a payment resumes it from its store, and the payment completes', async () => {
    await b.stop()
    const paid = a.pay({ tokenNetwork: net.tokenNetwork, target: b.address, amount: 12n, paymentId: 4242n }).catch((e: Error) => e)
    await eventually(() => expect(ab().our.locks).toHaveLength(1))
    // A goes down with the payment in flight (its LockedTransfer unacknowledged in the outbox).
    await a.stop()
    expect(await paid).toBeInstanceOf(Error)
    ;[a, b] = await Promise.all([startNode(net, keyA, { durable: true }), startNode(net, keyB, { durable: true })])
    await eventually(() => expect(balance(ba().our, ba().partnerEnd)).toBe(12n), 20_000)
    await eventually(() => expect(ab().our.locks).toEqual([]))
    expect(balance(ab().our, ab().partnerEnd)).toBe(488n)
    expect(ab().our.nonce).toBe(ba().partnerEnd.nonce)
    const history = await (a as unknown as { storage: { payments(q: object): Promise<{ event: string; identifier: bigint }[]> } }).storage.payments({})
    expect(history.filter((h) => h.identifier === 4242n).map((h) => h.event)).toEqual(['EventPaymentSentSuccess'])
  }, 60_000)
})
