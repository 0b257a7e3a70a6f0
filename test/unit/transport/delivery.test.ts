import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { encodeMessage, signMessage } from '../../../src/protocol/messages/index.ts'
import type { Message } from '../../../src/protocol/messages/types.ts'
import { MemoryVolume, openMemoryStorage } from '../../../src/storage/memoryStorage.ts'
import { createBroadcastChannelTransport } from '../../../src/transport/broadcastChannelTransport.ts'
import { createDelivery } from '../../../src/transport/delivery.ts'
import { lineSigner } from '../../../src/transport/lineSigner.ts'
import { requestMonitoringAckId } from '../../../src/protocol/monitoringRequest.ts'
import { pfsUpdateAckId } from '../../../src/protocol/pfsUpdateAck.ts'
import { monitoringRequest, partnerProof } from '../../support/monitoring.ts'
import { TOKEN_NETWORK, capacityUpdate, channelKeyOf, processed, record, secretRequest, unlock, withdrawConfirmation, withdrawRequest } from './messages.ts'
import { eventually, freshChannel, postRaw, sentLines, settle, sleep, testNode, type TestNode, type TestNodeOptions } from './support.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

const ch = channelKeyOf(7n)
const nodes: TestNode[] = []
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.delivery.stop()))
})

async function start(index: number, options: TestNodeOptions): Promise<TestNode> {
  const node = testNode(index, options)
  nodes.push(node)
  await node.delivery.start()
  return node
}

const line = async (index: number, message: Message) => encodeMessage(await signMessage(jsSecp256k1, anvilKeys[index]!, message))
const receivedTypes = (node: TestNode) => node.received.map((r) => `${r.message.type}:${'message_identifier' in r.message ? r.message.message_identifier : ''}`)

describe('delivery', () => {
  test('sends a channel queue in nonce order; the peer applies all; acknowledged keys come back', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName })
    const b = await start(2, { channelName, answers: true })
    await settle(a, b)
    const records = [3n, 1n, 2n].map((n) => record(b.address, unlock(10n + n, n), ch))
    a.put(records)
    await eventually(() => expect(a.outbox.size).toBe(0))
    expect(receivedTypes(b)).toEqual(['Unlock:11', 'Unlock:12', 'Unlock:13'])
    expect(b.received.every((r) => r.sender === a.address)).toBe(true)
    expect([...a.acknowledged].sort()).toEqual(records.map((r) => r.key).sort())
    // B's Processed were answered with Delivered by A, so B's outbox empties too.
    await eventually(() => expect(b.outbox.size).toBe(0))
    expect(a.delivery.stats()).toMatchObject({ pending: 0, invalid: 0 })
  })

  test('retries a balance proof with backoff until Processed arrives, then stops', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 10, maxMs: 40 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    a.put([record(b.address, unlock(1n, 1n), ch)])
    await eventually(() => expect(b.delivery.stats().received).toBeGreaterThanOrEqual(4))
    expect(a.delivery.stats().retries).toBeGreaterThanOrEqual(3)
    expect(a.delivery.stats().pending).toBe(1)
    expect(b.received).toHaveLength(1) // the resends are duplicates: handed up once
    b.put([record(a.address, processed(1n))])
    await eventually(() => expect(a.outbox.size).toBe(0))
    await sleep(60)
    const sent = sentLines(a, 'Unlock').length
    await sleep(100)
    expect(sentLines(a, 'Unlock')).toHaveLength(sent)
  })

  test('answers secret messages with one Delivered, never retried; balance proofs, Processed and Delivered get none', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 5000 } })
    const b = await start(2, { channelName, backoff: { initialMs: 5000 } })
    await settle(a, b)
    a.put([record(b.address, secretRequest(1n)), record(b.address, unlock(2n, 1n), ch)])
    b.put([record(a.address, processed(9n))])
    await eventually(() => expect(a.delivery.stats().received).toBe(2)) // Processed(9) + Delivered(1)
    await sleep(50)
    // The Unlock is acknowledged by the state machine's Processed, so the transport adds no Delivered for it.
    expect(sentLines(b, 'Delivered').map((m) => m.delivered_message_identifier)).toEqual(['1'])
    expect(sentLines(a, 'Delivered')).toEqual([])
    expect(b.received.map((r) => r.message.type).sort()).toEqual(['SecretRequest', 'Unlock'])
    expect(a.received).toEqual([]) // Processed and Delivered stay in the delivery layer
    // Processed is sent once and done: nothing waits for its acknowledgement.
    expect(b.outbox.size).toBe(0)
  })

  test('acknowledges a secret message only once the runtime has made it durable; a failed apply gets no Delivered and its resend is handed up again', async () => {
    const channelName = freshChannel()
    const applies: { resolve(): void; reject(e: Error): void }[] = []
    const a = await start(1, { channelName, backoff: { initialMs: 150, maxMs: 150 } })
    const b = await start(2, {
      channelName,
      applied: () => new Promise<void>((resolve, reject) => applies.push({ resolve, reject })),
    })
    await settle(a, b)
    a.put([record(b.address, secretRequest(1n))])
    await eventually(() => expect(receivedTypes(b)).toEqual(['SecretRequest:1']))
    await sleep(30)
    // Handed up, not yet durable: a crash now must leave the sender retrying, so no Delivered yet.
    expect(sentLines(b, 'Delivered')).toEqual([])
    applies[0]!.reject(new Error('the commit failed'))
    // The retry reaches the state machine again (the first apply failed), and is acknowledged once durable.
    await eventually(() => expect(receivedTypes(b)).toEqual(['SecretRequest:1', 'SecretRequest:1']))
    expect(sentLines(b, 'Delivered')).toEqual([])
    expect(a.outbox.size).toBe(1)
    applies[1]!.resolve()
    await eventually(() => expect(sentLines(b, 'Delivered').map((m) => m.delivered_message_identifier)).toEqual(['1']))
    await eventually(() => expect(a.outbox.size).toBe(0))
    // Later resends of it are answered at once: it is durable now.
    const resend = await line(1, secretRequest(1n))
    postRaw(channelName, b.address, a.address, [resend])
    await eventually(() => expect(sentLines(b, 'Delivered')).toHaveLength(2))
    expect(receivedTypes(b)).toHaveLength(2)
  })

  test('Delivered removes an unordered message but not a balance proof', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 5000 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    const request = record(b.address, secretRequest(1n))
    const proof = record(b.address, unlock(2n, 1n), ch)
    a.put([request, proof])
    await eventually(() => expect(a.acknowledged).toEqual([request.key]))
    await eventually(() => expect(a.delivery.stats().received).toBe(1))
    await eventually(() => expect(b.received).toHaveLength(2))
    expect(a.delivery.pending().map((r) => r.key)).toEqual([proof.key])
  })

  test('Processed from X removes messages to X with that id from every queue, and not those to another peer', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 5000 } })
    const b = await start(2, { channelName })
    const c = await start(3, { channelName })
    await settle(a, b, c)
    const toB = [record(b.address, unlock(5n, 1n), ch), record(b.address, processed(5n))]
    const toC = record(c.address, unlock(5n, 1n), ch)
    // A owes B a Processed(5) too (same id), so B's Processed(5) removes it as well (docs/protocol.md §3.5: all queues).
    a.put([...toB, toC])
    await eventually(() => expect(c.received).toHaveLength(1))
    b.put([record(a.address, processed(5n))])
    await eventually(() => expect([...a.acknowledged].sort()).toEqual(toB.map((r) => r.key).sort()))
    expect(a.delivery.pending().map((r) => r.key)).toEqual([toC.key])
  })

  test('a Processed of a later message drops the earlier ones of its channel queue (a lost Processed does not strand them)', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 5000 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    const records = [1n, 2n, 3n].map((n) => record(b.address, unlock(20n + n, n), ch))
    a.put(records)
    await eventually(() => expect(b.received).toHaveLength(3))
    b.put([record(a.address, processed(22n))])
    await eventually(() => expect([...a.acknowledged].sort()).toEqual([records[0]!.key, records[1]!.key].sort()))
    expect(a.delivery.pending().map((r) => r.key)).toEqual([records[2]!.key])
  })

  test('a WithdrawRequest is removed only by the WithdrawConfirmation with its id', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 20, maxMs: 40 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    const request = withdrawRequest(7n, 1n, a.address)
    a.put([record(b.address, request, ch), record(b.address, unlock(8n, 2n), ch)])
    await eventually(() => expect(b.received).toHaveLength(2))
    b.put([record(a.address, processed(7n)), record(a.address, processed(8n))])
    await eventually(() => expect(a.acknowledged).toEqual([record(b.address, unlock(8n, 2n), ch).key]))
    await sleep(60) // the Processed(7) arrived too and removed nothing: the request is still retried
    expect(a.delivery.pending().map((r) => r.message.type)).toEqual(['WithdrawRequest'])
    const retriedBefore = sentLines(a, 'WithdrawRequest').length
    await eventually(() => expect(sentLines(a, 'WithdrawRequest').length).toBeGreaterThan(retriedBefore))
    b.put([record(a.address, withdrawConfirmation(request, 1n), ch)])
    await eventually(() => expect(a.outbox.size).toBe(0))
    expect(a.received.map((r) => r.message.type)).toEqual(['WithdrawConfirmation'])
  })

  test("Processed is sent once: a lost one is made good by the sender's retry, answered with it again", async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 20, maxMs: 40 } })
    const b = await start(2, { channelName, answers: true, backoff: { initialMs: 20, maxMs: 40 } })
    await settle(a, b)
    let sent = 0
    b.drop = (l) => JSON.parse(l).type === 'Processed' && sent++ === 0
    a.put([record(b.address, unlock(1n, 1n), ch)])
    await eventually(() => expect(a.outbox.size).toBe(0))
    // The first Processed, lost; a repeat for each resend of A's that came before a repeat reached A (one on a quiet
    // machine; A retries every 20-40 ms, so a busy one may see more), never one of B's own.
    expect(sent).toBeGreaterThanOrEqual(2)
    expect(sent).toBeLessThanOrEqual(sentLines(a, 'Unlock').length)
    expect(sentLines(a, 'Unlock').length).toBeGreaterThanOrEqual(2)
    expect(b.outbox.size).toBe(0)
    expect(b.delivery.stats().retries).toBe(0)
    expect(b.acknowledged).toEqual([record(a.address, processed(1n)).key])
  })

  test('a resend of a message already answered is answered again at once, and not handed up again', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 20, maxMs: 40 } })
    // B would retry its Processed only after a minute: the resend from A must trigger the repeat.
    const b = await start(2, { channelName, answers: true, backoff: { initialMs: 60_000 } })
    await settle(a, b)
    let lost = 0
    b.drop = (l) => JSON.parse(l).type === 'Processed' && lost++ === 0
    a.put([record(b.address, unlock(1n, 1n), ch)])
    await eventually(() => expect(a.outbox.size).toBe(0))
    expect(sentLines(a, 'Unlock').length).toBeGreaterThanOrEqual(2)
    expect(b.received).toHaveLength(1)
    expect(b.delivery.stats().duplicates).toBeGreaterThanOrEqual(1)
    expect(b.delivery.stats().retries).toBe(0) // the repeat was not B's own retry
  })

  test('suppresses duplicates (same sender, type and id; or same signature) but still answers each secret message with Delivered', async () => {
    const channelName = freshChannel()
    const b = await start(2, { channelName, redeliverAfterMs: 60_000 })
    const sender = privateKeyToAddress(anvilKeys[1]!)
    const proof = await line(1, unlock(1n, 1n))
    const request = await line(1, secretRequest(2n))
    const capacity = await line(1, capacityUpdate(sender, b.address))
    postRaw(channelName, b.address, sender, [proof, request, capacity])
    postRaw(channelName, b.address, sender, [proof, request, capacity])
    // The same type and id with other content (another signature) is a duplicate too, unless the message takes a
    // nonce: a second balance proof under an id is handed up, for the core to tell a resend from an equivocation.
    postRaw(channelName, b.address, sender, [await line(1, { ...secretRequest(2n), amount: 6n })])
    postRaw(channelName, b.address, sender, [await line(1, { ...unlock(1n, 1n), transferred_amount: 99n })])
    await eventually(() => expect(b.delivery.stats().received).toBe(8))
    // A node keeps no route announcements (a pathfinding service does): the capacity update is counted, not handed up.
    expect(receivedTypes(b)).toEqual(['Unlock:1', 'SecretRequest:2', 'Unlock:1'])
    expect(b.delivery.stats().duplicates).toBe(3)
    await eventually(() => expect(sentLines(b, 'Delivered', sender).map((m) => m.delivered_message_identifier)).toEqual(['2', '2', '2']))
  })

  test('hands an unanswered balance proof up again after redeliverAfterMs, but never a duplicate secret message', async () => {
    const channelName = freshChannel()
    // The window on a clock of the test's own: a busy machine's gap between two posts must not open it.
    let clock = 1_000_000
    const b = await start(2, { channelName, redeliverAfterMs: 50, now: () => clock })
    const sender = privateKeyToAddress(anvilKeys[1]!)
    const lines = [await line(1, unlock(1n, 1n)), await line(1, secretRequest(2n))]
    postRaw(channelName, b.address, sender, lines)
    postRaw(channelName, b.address, sender, lines)
    await eventually(() => expect(b.delivery.stats().received).toBe(4))
    expect(receivedTypes(b)).toEqual(['Unlock:1', 'SecretRequest:2'])
    clock += 60
    postRaw(channelName, b.address, sender, lines)
    await eventually(() => expect(b.delivery.stats().received).toBe(6))
    expect(receivedTypes(b)).toEqual(['Unlock:1', 'SecretRequest:2', 'Unlock:1'])
    expect(b.delivery.stats().redelivered).toBe(1)
  })

  test('a balance proof still being applied (its commit waits on a busy machine) is not handed up again, however long; once durable and unanswered, it is', async () => {
    const channelName = freshChannel()
    let clock = 1_000_000
    const applies: (() => void)[] = []
    const b = await start(2, {
      channelName,
      redeliverAfterMs: 50,
      now: () => clock,
      applied: () => new Promise<void>((resolve) => applies.push(resolve)),
    })
    const sender = privateKeyToAddress(anvilKeys[1]!)
    const lines = [await line(1, unlock(1n, 1n))]
    postRaw(channelName, b.address, sender, lines)
    await eventually(() => expect(receivedTypes(b)).toEqual(['Unlock:1']))
    // Its resend long after, while the first is still on its way to the store: the core would see the nonce used with
    // nothing stored to compare it to, and refuse it (a warning for nothing). It waits for the first instead.
    clock += 10_000
    postRaw(channelName, b.address, sender, lines)
    await eventually(() => expect(b.delivery.stats().received).toBe(2))
    expect(receivedTypes(b)).toEqual(['Unlock:1'])
    expect(b.delivery.stats().redelivered).toBe(0)
    // Durable, and still unanswered after the window: handed up again.
    applies[0]!()
    await sleep(10)
    clock += 60
    postRaw(channelName, b.address, sender, lines)
    await eventually(() => expect(b.delivery.stats().received).toBe(3))
    expect(receivedTypes(b)).toEqual(['Unlock:1', 'Unlock:1'])
    expect(b.delivery.stats().redelivered).toBe(1)
  })

  test('after a cut, a balance proof refused for a nonce gap is taken at once when its predecessors come, not redeliverAfterMs later', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 50, maxMs: 60_000 } })
    const b = await start(2, { channelName, answers: true, inOrder: true, redeliverAfterMs: 60_000 })
    await settle(a, b)
    // The link is cut: two payments' proofs are lost, each send of them, and their retries back off.
    let cut = true
    a.drop = () => cut
    a.put([record(b.address, unlock(11n, 1n), ch), record(b.address, unlock(12n, 2n), ch)])
    await eventually(() => expect(sentLines(a, 'Unlock').length).toBeGreaterThanOrEqual(8))
    cut = false
    // Back: the next payment's proof goes first, alone (the others wait for their timers), and is refused ("nonce 3 is
    // not 1"). Its retry brings the two before it; B takes them, and then it, at once.
    const t0 = performance.now()
    a.put([record(b.address, unlock(13n, 3n), ch)])
    await eventually(() => expect(b.refused).toEqual([3n]))
    await eventually(() => expect(a.outbox.size).toBe(0))
    expect(performance.now() - t0).toBeLessThan(3_000)
    expect(receivedTypes(b)).toEqual(['Unlock:13', 'Unlock:11', 'Unlock:12', 'Unlock:13'])
    expect(b.refused).toEqual([3n])
  })

  test('after a cut its sends failed through, the first send to the peer brings what was lost before it, in order: nothing is refused, nothing waits for its timer', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 50, maxMs: 60_000 } })
    const b = await start(2, { channelName, answers: true, inOrder: true, redeliverAfterMs: 60_000 })
    await settle(a, b)
    let cut = true
    a.unreachable = () => cut
    a.put([record(b.address, unlock(11n, 1n), ch), record(b.address, secretRequest(30n)), record(b.address, unlock(12n, 2n), ch)])
    // Long enough for the backoff to reach seconds: what was lost waits for no timer once the peer is in reach.
    await eventually(() => expect(sentLines(a, 'Unlock').length).toBeGreaterThanOrEqual(14))
    cut = false
    const t0 = performance.now()
    a.put([record(b.address, unlock(13n, 3n), ch)])
    await eventually(() => expect(a.outbox.size).toBe(0))
    expect(performance.now() - t0).toBeLessThan(1_000)
    expect(b.refused).toEqual([])
    expect(receivedTypes(b)).toEqual(['Unlock:11', 'Unlock:12', 'Unlock:13', 'SecretRequest:30'])
  })

  test('resends at once when the peer is seen, without waiting for the backoff', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 60_000 } })
    const bAddress = privateKeyToAddress(anvilKeys[2]!)
    a.put([record(bAddress, unlock(1n, 1n), ch)])
    await eventually(() => expect(a.sends).toHaveLength(1)) // lost: B is not there
    const b = await start(2, { channelName, answers: true })
    await eventually(() => expect(a.outbox.size).toBe(0))
    expect(b.received).toHaveLength(1)
    expect(sentLines(a, 'Unlock')).toHaveLength(2)
  })

  test('resumes from the stored outbox after a restart: everything pending goes out at once; acknowledged keys get deleted', async () => {
    const channelName = freshChannel()
    const key = anvilKeys[1]!
    const address = privateKeyToAddress(key)
    const bAddress = privateKeyToAddress(anvilKeys[2]!)
    const identity = { chainId: 31337n, registry: TOKEN_NETWORK, address }
    const volume = new MemoryVolume()
    // What the runtime does: commit the outbox puts with the state change, then enqueue; delete what is acknowledged.
    const run = async () => {
      const storage = await openMemoryStorage(identity, { volume })
      const sends: number[] = []
      const transport = createBroadcastChannelTransport({ address, channelName })
      const delivery = createDelivery({
        curve: jsSecp256k1,
        transport: {
          ...transport,
          send: (to, lines) => {
            sends.push(lines.length)
            return transport.send(to, lines)
          },
        },
        address,
        sign: lineSigner(jsSecp256k1, key),
        backoff: { initialMs: 60_000 },
        onMessage: () => {},
        onAcknowledged: (keys) => void storage.commit({ outbox: { delete: keys } }),
      })
      const { outbox } = await storage.load()
      delivery.enqueue(outbox)
      await delivery.start()
      return { storage, delivery, loaded: outbox, sends }
    }
    const first = await run()
    const records = [record(bAddress, unlock(1n, 1n), ch), record(bAddress, unlock(2n, 2n), ch), record(bAddress, secretRequest(3n))]
    await first.storage.commit({ outbox: { put: records } })
    first.delivery.enqueue(records)
    await eventually(() => expect(first.delivery.stats().sendCalls).toBe(1)) // lost: B is not there yet
    await first.delivery.stop()
    await first.storage.close()

    const b = await start(2, { channelName, answers: true })
    await sleep(20)
    const again = await run()
    expect(again.loaded.map((r) => r.key).sort()).toEqual(records.map((r) => r.key).sort())
    await eventually(async () => expect((await again.storage.load()).outbox).toEqual([]))
    expect(receivedTypes(b).sort()).toEqual(['SecretRequest:3', 'Unlock:1', 'Unlock:2'])
    expect(receivedTypes(b).filter((t) => t.startsWith('Unlock'))).toEqual(['Unlock:1', 'Unlock:2'])
    // At start, not on a retry (a minute away) or on presence: the first send carried all three.
    expect(again.sends[0]).toBe(3)
    await again.delivery.stop()
    await again.storage.close()
  })

  test("a resumed outbox waits for the host's moment, then goes out; presence after that resends as usual", async () => {
    const channelName = freshChannel()
    const bAddress = privateKeyToAddress(anvilKeys[2]!)
    const left = [record(bAddress, unlock(1n, 1n), ch), record(bAddress, secretRequest(2n))]
    let resend!: () => void
    const a = await start(1, { channelName, outbox: left, resendWhen: () => new Promise<void>((resolve) => (resend = resolve)) })
    await sleep(50)
    expect(a.sends).toEqual([])
    resend()
    await eventually(() => expect(sentLines(a, 'Unlock')).toHaveLength(1)) // lost: B is not there
    expect(sentLines(a, 'SecretRequest')).toHaveLength(1)
    const b = await start(2, { channelName, answers: true })
    await eventually(() => expect(a.outbox.size).toBe(0))
    expect(receivedTypes(b).sort()).toEqual(['SecretRequest:2', 'Unlock:1'])
  })

  test('a held message goes at once with a later message of its channel queue, which the peer takes only after it', async () => {
    const channelName = freshChannel()
    const b = await start(2, { channelName, answers: true })
    const left = [record(b.address, unlock(1n, 1n), ch), record(b.address, secretRequest(9n))]
    // The host's moment never comes in this test, and B is not seen again: only the new Unlock can carry Unlock 1.
    const a = await start(1, { channelName, outbox: left, resendWhen: () => new Promise(() => {}) })
    a.put([record(b.address, unlock(2n, 2n), ch)])
    await eventually(() => expect(receivedTypes(b)).toEqual(['Unlock:1', 'Unlock:2']))
    expect(a.sends[0]!.lines.map((l) => JSON.parse(l).type)).toEqual(['Unlock', 'Unlock'])
    expect(sentLines(a, 'SecretRequest')).toEqual([])
  })

  test('drops invalid lines (counted and logged) and still takes the valid ones of the batch', async () => {
    const channelName = freshChannel()
    const b = await start(2, { channelName })
    const sender = privateKeyToAddress(anvilKeys[1]!)
    const good = await line(1, secretRequest(1n))
    const badSignature = good.replace(/"signature":"0x[0-9a-f]{128}/, `"signature":"0x${'00'.repeat(64)}`)
    const missingField = JSON.stringify({ ...JSON.parse(good), amount: undefined })
    postRaw(channelName, b.address, sender, ['not json', '{"type":"Ping"}', badSignature, missingField, good])
    await eventually(() => expect(b.received).toHaveLength(1))
    expect(b.delivery.stats().invalid).toBe(4)
    expect(b.logs.map((e) => (e.type === 'invalidLine' ? e.error.name : e.type))).toEqual([
      'InvalidMessageError',
      'InvalidMessageError',
      'InvalidSignatureError',
      'InvalidMessageError',
    ])
  })

  test('a message signed by another than the peer that sent it is dropped and counted, neither handed up nor answered (decision 0064)', async () => {
    const channelName = freshChannel()
    const b = await start(2, { channelName })
    const claimed = privateKeyToAddress(anvilKeys[3]!)
    const signer = privateKeyToAddress(anvilKeys[4]!)
    const forwarded = await line(4, secretRequest(1n))
    postRaw(channelName, b.address, claimed, [forwarded])
    await eventually(() => expect(b.delivery.stats().wrongSigner).toBe(1))
    expect(b.logs).toEqual([{ type: 'wrongSigner', from: claimed, signer }])
    // The same line from its signer is taken, handed up with that signer and answered to it.
    postRaw(channelName, b.address, signer, [forwarded])
    await eventually(() => expect(b.received).toHaveLength(1))
    expect(b.received[0]!.sender).toBe(signer)
    await eventually(() => expect(b.sends.map((s) => s.to)).toEqual([signer]))
    expect(b.delivery.stats()).toMatchObject({ wrongSigner: 1, received: 1, invalid: 0 })
  })

  test('drops messages signed by this node itself', async () => {
    const channelName = freshChannel()
    const b = await start(2, { channelName })
    postRaw(channelName, b.address, privateKeyToAddress(anvilKeys[1]!), [await line(2, secretRequest(1n))])
    await eventually(() => expect(b.logs.map((e) => e.type)).toEqual(['ownMessage']))
    expect(b.received).toEqual([])
  })

  test('batches: what is queued in the same tick goes to each peer in one send; a received batch is answered in one', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 5000 } })
    const b = await start(2, { channelName, backoff: { initialMs: 5000 } })
    const c = await start(3, { channelName, backoff: { initialMs: 5000 } })
    await settle(a, b, c)
    a.put([record(b.address, secretRequest(1n))])
    a.put([record(b.address, secretRequest(2n)), record(c.address, secretRequest(3n))])
    a.put([record(b.address, unlock(4n, 1n), ch)])
    await eventually(() => expect(a.delivery.stats().received).toBe(3))
    expect(a.sends.map((s) => [s.to, s.lines.length])).toHaveLength(2)
    expect(a.sends.map((s) => [s.to, s.lines.length])).toEqual(
      expect.arrayContaining([
        [b.address, 3],
        [c.address, 1],
      ]),
    )
    // B answers the two secret requests of the batch in one send; the Unlock waits for its Processed.
    expect(b.sends.map((s) => [s.to, s.lines.length])).toEqual([[a.address, 2]])
  })

  test('a message nothing acknowledges is sent once and reported done', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 10 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    const update = record(b.address, capacityUpdate(a.address, b.address))
    a.put([update])
    await eventually(() => expect(a.acknowledged).toEqual([update.key]))
    await sleep(50)
    expect(a.sends).toHaveLength(1)
    // B's state machine takes no route announcement (its gossip would: decision 0074), and B acknowledges none.
    expect(b.received).toEqual([])
    expect(sentLines(b, 'Delivered')).toEqual([])
  })

  test('a route announcement another node signed, passed on with sendOnce, is heard as it is with the peer that carried it, once, unacknowledged (decision 0074)', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 10, maxMs: 20 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    const heard: { type: string; signer: string; from: string }[] = []
    b.delivery.onAnnouncement((message, from) => void heard.push({ type: message.type, signer: message.updating_participant, from }))
    // C's own update of its channel with B, which A passes on.
    const c = privateKeyToAddress(anvilKeys[3]!)
    const update = await signMessage(jsSecp256k1, anvilKeys[3]!, capacityUpdate(c, b.address))
    a.delivery.sendOnce(b.address, update)
    await eventually(() => expect(heard).toEqual([{ type: 'PFSCapacityUpdate', signer: c, from: a.address }]))
    await sleep(60)
    expect(sentLines(a, 'PFSCapacityUpdate', b.address)).toEqual([JSON.parse(encodeMessage(update))])
    expect(sentLines(b, 'Delivered')).toEqual([])
    expect(b.received).toEqual([])
  })

  test('a signed PFSCapacityUpdate is resent until the Delivered with the id derived from it (decision 0072)', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 10, maxMs: 20 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    const update = await signMessage(jsSecp256k1, anvilKeys[1]!, capacityUpdate(a.address, b.address))
    const queued = { ...record(b.address, update), key: 'pathfinding|b|7' }
    a.put([queued])
    await eventually(() => expect(sentLines(a, 'PFSCapacityUpdate', b.address).length).toBeGreaterThanOrEqual(3))
    const id = pfsUpdateAckId(update)
    postRaw(channelName, a.address, b.address, [await line(2, { type: 'Delivered', delivered_message_identifier: id + 1n })])
    await sleep(50)
    expect(a.outbox.has(queued.key)).toBe(true)
    postRaw(channelName, a.address, b.address, [await line(2, { type: 'Delivered', delivered_message_identifier: id })])
    await eventually(() => expect(a.acknowledged).toEqual([queued.key]))
  })

  test('a RequestMonitoring is resent until the Delivered with the id derived from it (decision 0031); a node that receives one neither takes nor acknowledges it', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 10, maxMs: 20 } })
    const b = await start(2, { channelName })
    await settle(a, b)
    const proof = partnerProof(anvilKeys[3]!, { tokenNetwork: TOKEN_NETWORK, chainId: 31337n, channelId: 7n }, { nonce: 2n, transferred: 5n })
    const request = monitoringRequest(anvilKeys[1]!, proof, TOKEN_NETWORK, 10n)
    const queued = { ...record(b.address, request), key: 'monitoring|b|7' }
    a.put([queued])
    await eventually(() => expect(sentLines(a, 'RequestMonitoring', b.address).length).toBeGreaterThanOrEqual(3))
    // B, a node, is no monitoring service: nothing handed up, no Delivered.
    expect(b.received).toEqual([])
    expect(sentLines(b, 'Delivered')).toEqual([])
    expect(a.outbox.has(queued.key)).toBe(true)
    // Another id, or the right id from someone else than the recipient, acknowledges nothing.
    const id = requestMonitoringAckId(request)
    postRaw(channelName, a.address, b.address, [await line(2, { type: 'Delivered', delivered_message_identifier: id + 1n })])
    postRaw(channelName, a.address, b.address, [await line(3, { type: 'Delivered', delivered_message_identifier: id })])
    await sleep(50)
    expect(a.outbox.has(queued.key)).toBe(true)
    postRaw(channelName, a.address, b.address, [await line(2, { type: 'Delivered', delivered_message_identifier: id })])
    await eventually(() => expect(a.acknowledged).toEqual([queued.key]))
    const sent = sentLines(a, 'RequestMonitoring').length
    await sleep(60)
    expect(sentLines(a, 'RequestMonitoring')).toHaveLength(sent)
  })

  test("a peer whose send stalls holds up no other peer's messages; its own batches keep their order", async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 5000 } })
    const b = await start(2, { channelName })
    const c = await start(3, { channelName })
    await settle(a, b, c)
    let release!: () => void
    const stalled = new Promise<void>((r) => (release = r))
    a.stall = (to) => (to.toLowerCase() === b.address.toLowerCase() ? stalled : undefined)
    a.put([record(b.address, secretRequest(1n))])
    await sleep(20)
    a.put([record(b.address, secretRequest(2n))])
    a.put([record(c.address, secretRequest(3n))])
    await eventually(() => expect(receivedTypes(c)).toEqual(['SecretRequest:3']))
    expect(b.received).toEqual([])
    release()
    await eventually(() => expect(receivedTypes(b)).toEqual(['SecretRequest:1', 'SecretRequest:2']))
  })

  test('cancel stops the retries of a message', async () => {
    const channelName = freshChannel()
    const a = await start(1, { channelName, backoff: { initialMs: 10, maxMs: 10 } })
    const proof = record(privateKeyToAddress(anvilKeys[2]!), unlock(1n, 1n), ch)
    a.put([proof])
    await eventually(() => expect(a.sends.length).toBeGreaterThanOrEqual(2))
    a.delivery.cancel([proof.key])
    const count = a.sends.length
    await sleep(50)
    expect(a.sends.length).toBeLessThanOrEqual(count + 1) // at most one send already under way
    expect(a.delivery.stats().pending).toBe(0)
  })

  test('acknowledgements heard by a listener subscribed after delivery was made (it sends through delivery); without one delivery does not start', async () => {
    const channelName = freshChannel()
    const key = anvilKeys[1]!
    const address = privateKeyToAddress(key)
    const transport = createBroadcastChannelTransport({ address, channelName })
    const delivery = createDelivery({
      curve: jsSecp256k1,
      transport,
      address,
      sign: lineSigner(jsSecp256k1, key),
      backoff: { initialMs: 30 },
      onMessage: () => {},
    })
    try {
      // Nothing is acknowledged before it starts, and it does not start with nobody to hear it: none is lost.
      await expect(delivery.start()).rejects.toThrow(/acknowledgements are heard/)
      const acknowledged: string[] = []
      delivery.onAcknowledged((keys) => void acknowledged.push(...keys))
      expect(() => delivery.onAcknowledged(() => {})).toThrow(/heard already/)
      await delivery.start()
      const b = await start(2, { channelName, answers: true })
      const sent = record(b.address, unlock(1n, 1n), ch)
      delivery.enqueue([sent])
      await eventually(() => expect(acknowledged).toEqual([sent.key]))
      expect(receivedTypes(b)).toEqual(['Unlock:1'])
    } finally {
      await delivery.stop()
    }
  })
})
