// The flusher alone: real outbox queues, and in place of a transport a send that records what it is handed (and
// can stall or fail on command). Lines are `type:id` rather than signed JSON: the flusher never reads them.
import type { Address } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterEach, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import type { Message } from '../../../src/protocol/messages/types.ts'
import { retrievableId } from '../../../src/transport/acknowledgement.ts'
import { Flusher, type FlusherLogEvent } from '../../../src/transport/flusher.ts'
import { OutboxQueues } from '../../../src/transport/outboxQueues.ts'
import { capacityUpdate, channelKeyOf, processed, record, secretRequest, unlock } from './messages.ts'
import { eventually, sleep } from './support.ts'

const [B, C] = [privateKeyToAddress(anvilKeys[2]!), privateKeyToAddress(anvilKeys[3]!)]
const ch = channelKeyOf(7n)
const lineOf = (m: Message) => `${m.type}:${retrievableId(m) ?? ''}`

const made: Flusher[] = []
afterEach(async () => {
  await Promise.all(made.splice(0).map((f) => f.stop()))
})

function flusher(options: { initialMs?: number; refuse?: (m: Message) => boolean } = {}) {
  const queues = new OutboxQueues({ initialMs: options.initialMs ?? 20, maxMs: 1_000 })
  const sends: { to: Address; lines: string[] }[] = []
  const finished: string[] = []
  const logs: FlusherLogEvent[] = []
  const stalls = new Map<string, Promise<void>>()
  const failing = new Set<string>()
  const f = new Flusher({
    queues,
    sign: (m) => {
      if (options.refuse?.(m)) throw new Error('cannot sign')
      return lineOf(m)
    },
    async send(to, lines) {
      await stalls.get(to)
      sends.push({ to, lines })
      if (failing.has(to)) throw new Error('peer unreachable')
    },
    finished: (keys) => finished.push(...keys),
    now: Date.now,
    log: (e) => logs.push(e),
  })
  made.push(f)
  const put = (...records: ReturnType<typeof record>[]) => {
    for (const r of records) queues.add(r, Date.now())
    f.schedule()
  }
  return { f, queues, sends, finished, logs, stalls, failing, put }
}

describe('the flusher', () => {
  test('nothing goes before start; then what was queued in one tick goes out as one send per peer, a channel queue in nonce order', async () => {
    const { f, sends, put } = flusher({ initialMs: 60_000 })
    put(record(B, unlock(13n, 3n), ch), record(B, unlock(11n, 1n), ch), record(C, secretRequest(5n)), record(B, unlock(12n, 2n), ch))
    await sleep(10)
    expect(sends).toEqual([])
    f.start()
    f.schedule()
    await eventually(() => expect(sends).toHaveLength(2))
    expect(sends).toContainEqual({ to: B, lines: ['Unlock:11', 'Unlock:12', 'Unlock:13'] })
    expect(sends).toContainEqual({ to: C, lines: ['SecretRequest:5'] })
    expect(f.stats).toEqual({ sendCalls: 2, linesSent: 4, retries: 0 })
  })

  test('retries on its timer until the queues let go of a message; each retry is counted', async () => {
    const { f, queues, sends, put } = flusher({ initialMs: 15 })
    f.start()
    const proof = record(B, unlock(1n, 1n), ch)
    put(proof)
    await eventually(() => expect(sends.length).toBeGreaterThanOrEqual(3))
    expect(new Set(sends.map((s) => s.lines.join()))).toEqual(new Set(['Unlock:1']))
    queues.processed(B, 1n)
    const count = sends.length
    await sleep(80)
    expect(sends.length).toBeLessThanOrEqual(count + 1) // a retry already under way
    expect(f.stats.retries).toBe(sends.length - 1)
  })

  test('one-shot messages go with the next flush, in the same send as what is due to that peer, and never again', async () => {
    const { f, sends, put } = flusher({ initialMs: 60_000 })
    f.start()
    f.sendOnce(B, { type: 'Delivered', delivered_message_identifier: 9n })
    f.sendOnce(B, processed(4n))
    put(record(B, secretRequest(5n)))
    await eventually(() => expect(sends).toEqual([{ to: B, lines: ['Delivered:', 'Processed:4', 'SecretRequest:5'] }]))
    f.schedule()
    await sleep(20)
    expect(sends).toHaveLength(1)
  })

  test('what nothing acknowledges is reported done once handed to the transport, and not before', async () => {
    const { f, sends, finished, stalls, put } = flusher()
    f.start()
    let release!: () => void
    stalls.set(B, new Promise((r) => (release = r)))
    const update = record(B, capacityUpdate(C, B))
    put(update)
    await sleep(20)
    expect(finished).toEqual([])
    release()
    await eventually(() => expect(finished).toEqual([update.key]))
    expect(sends).toEqual([{ to: B, lines: ['PFSCapacityUpdate:'] }])
  })

  test("a peer whose send stalls holds up no other peer's nor the next flush; its own batches keep their order", async () => {
    const { f, sends, stalls, put } = flusher({ initialMs: 60_000 })
    f.start()
    let release!: () => void
    stalls.set(B, new Promise((r) => (release = r)))
    put(record(B, secretRequest(1n)))
    await sleep(5)
    put(record(B, secretRequest(2n)))
    await sleep(5)
    put(record(C, secretRequest(3n)))
    await eventually(() => expect(sends).toEqual([{ to: C, lines: ['SecretRequest:3'] }]))
    stalls.delete(B)
    release()
    await eventually(() =>
      expect(sends.slice(1)).toEqual([
        { to: B, lines: ['SecretRequest:1'] },
        { to: B, lines: ['SecretRequest:2'] },
      ]),
    )
  })

  test('a failed send and a message that cannot be signed are logged; the rest of the batch still goes', async () => {
    const { f, sends, logs, failing, put } = flusher({ initialMs: 60_000, refuse: (m) => retrievableId(m) === 2n })
    f.start()
    failing.add(B)
    put(record(B, secretRequest(1n)), record(B, secretRequest(2n)), record(C, secretRequest(3n)))
    await eventually(() => expect(sends).toHaveLength(2))
    expect(sends).toContainEqual({ to: B, lines: ['SecretRequest:1'] })
    expect(logs).toContainEqual(expect.objectContaining({ type: 'signFailed', key: record(B, secretRequest(2n)).key }))
    await eventually(() => expect(logs).toContainEqual(expect.objectContaining({ type: 'sendFailed', to: B })))
  })

  test('what a failed send carried is resent as soon as a send to that peer goes through, not at its backoff timer', async () => {
    const { f, sends, failing, put } = flusher({ initialMs: 60_000 })
    f.start()
    failing.add(B)
    put(record(B, secretRequest(1n)))
    await eventually(() => expect(sends).toHaveLength(1))
    await sleep(10)
    failing.delete(B)
    put(record(B, secretRequest(2n)))
    await eventually(() => expect(sends.map((s) => s.lines)).toEqual([['SecretRequest:1'], ['SecretRequest:2'], ['SecretRequest:1']]))
  })

  test('stop waits for the sends under way, then nothing more goes and nothing is reported done', async () => {
    const { f, sends, finished, stalls, put } = flusher({ initialMs: 10 })
    f.start()
    let release!: () => void
    stalls.set(B, new Promise((r) => (release = r)))
    put(record(B, unlock(1n, 1n), ch), record(B, capacityUpdate(C, B)))
    await sleep(5)
    let stopped = false
    const stopping = f.stop().then(() => (stopped = true))
    await sleep(20)
    expect(stopped).toBe(false)
    release()
    await stopping
    const count = sends.length
    f.schedule()
    await sleep(40)
    expect(sends).toHaveLength(count)
    expect(finished).toEqual([])
  })
})
