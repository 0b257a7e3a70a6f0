import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { balance } from '../../src/protocol/channel/amounts.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startDevnet, startNode, type Devnet } from './support/devnet.ts'
import { eventually } from './support/eventually.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { sendPayment } from '../../src/node/actions/payments.ts'
import { publicKeyOf } from '../../src/protocol/state/access.ts'
import { privateKeyToAccount } from 'viem/accounts'

const [keyA, keyB] = [anvilKeys[6], anvilKeys[7]]
let net: Devnet
let a: SluiceNode
let b: SluiceNode

beforeAll(async () => {
  net = await startDevnet([keyA, keyB], 1000n)
  ;[a, b] = await Promise.all([startNode(net, keyA, { durable: true }), startNode(net, keyB, { durable: true })])
  await openChannelOnChain(a.client, { tokenNetwork: net.tokenNetwork, partner: b.address, totalDeposit: 500n })
  await b.client.waitForBlock(await a.client.chain.publicClient.getBlockNumber())
}, 60_000)

afterAll(async () => {
  await Promise.all([a, b].map((n) => n?.stop()))
  await net?.stop()
})

const mine = (blocks: number) => createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] }).mine({ blocks })
const ab = () => a.client.channel(net.tokenNetwork, b.address)!
const ba = () => b.client.channel(net.tokenNetwork, a.address)!

describe('recovery with durable storage (LevelDB)', () => {
  test('the target is offline: the lock expires, the funds come back, and the target catches up when it returns', async () => {
    await b.stop()
    const paying = sendPayment(a.client, { token: net.token, target: b.address, amount: 30n }).catch((e: Error) => e)
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
    const paid = sendPayment(a.client, { token: net.token, target: b.address, amount: 12n, identifier: 4242n }).catch((e: Error) => e)
    await eventually(() => expect(ab().our.locks).toHaveLength(1))
    // A goes down with the payment in flight (its LockedTransfer unacknowledged in the outbox).
    await a.stop()
    expect(await paid).toBeInstanceOf(Error)
    ;[a, b] = await Promise.all([startNode(net, keyA, { durable: true }), startNode(net, keyB, { durable: true })])
    // The client retries after the lost connection: the resumed payment is waited for, not paid again.
    const retried = sendPayment(a.client, { token: net.token, target: b.address, amount: 12n, identifier: 4242n })
    await eventually(() => expect(balance(ba().our, ba().partnerEnd)).toBe(12n), 20_000)
    expect(await retried).toMatchObject({ identifier: 4242n, amount: 12n, target: b.address })
    await eventually(() => expect(ab().our.locks).toEqual([]))
    expect(balance(ab().our, ab().partnerEnd)).toBe(488n)
    expect(ab().our.nonce).toBe(ba().partnerEnd.nonce)
    const history = await (a as unknown as { storage: { payments(q: object): Promise<{ event: string; identifier: bigint }[]> } }).storage.payments({})
    expect(history.filter((h) => h.identifier === 4242n).map((h) => h.event)).toEqual(['EventPaymentSentSuccess'])
  }, 60_000)

  test('what a node learned survives a restart: the target key, and a payment retried by its identifier pays nothing again', async () => {
    const first = await sendPayment(a.client, { token: net.token, target: b.address, amount: 5n, identifier: 777n })
    const before = balance(ab().our, ab().partnerEnd)
    await a.stop()
    a = await startNode(net, keyA, { durable: true })
    // B's key was learned from its signed messages and kept in the store: the next payment's secret is encrypted to it.
    expect(publicKeyOf(a.state, b.address)).toBe(`0x${privateKeyToAccount(keyB!).publicKey.slice(4)}`)
    const again = await sendPayment(a.client, { token: net.token, target: b.address, amount: 5n, identifier: 777n })
    expect(again).toEqual(first)
    expect(balance(ab().our, ab().partnerEnd)).toBe(before)
    await expect(sendPayment(a.client, { token: net.token, target: b.address, amount: 6n, identifier: 777n })).rejects.toMatchObject({ code: 'CONFLICT' })
    expect(balance(ab().our, ab().partnerEnd)).toBe(before)
    const history = await a.client.store.payments({})
    expect(history.filter((h) => h.identifier === 777n)).toHaveLength(1)
  }, 60_000)
})
