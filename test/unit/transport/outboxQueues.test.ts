import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import { retryDelay } from '../../../src/transport/backoff.ts'
import { OutboxQueues } from '../../../src/transport/outboxQueues.ts'
import { capacityUpdate, channelKeyOf, processed, record, secretRequest, unlock, withdrawRequest } from './messages.ts'

const X: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const Y: Address = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
const ch = channelKeyOf(7n)
const backoff = { initialMs: 100, maxMs: 1000 }

function queuesWith(...records: ReturnType<typeof record>[]) {
  const q = new OutboxQueues(backoff)
  for (const r of records) q.add(r, 0)
  return q
}
const keysDue = (q: OutboxQueues, now: number) => [...q.takeDue(now).due.values()].flat().map((p) => p.record.key)
const pendingKeys = (q: OutboxQueues) =>
  q
    .records()
    .map((r) => r.key)
    .sort()

describe('backoff', () => {
  test('doubles from the initial delay and stops at the maximum', () => {
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => retryDelay(backoff, n))).toEqual([100, 200, 400, 800, 1000, 1000, 1000])
  })
})

describe('what is due', () => {
  test('a channel queue goes out in nonce order, whatever the enqueue order', () => {
    const q = queuesWith(record(X, unlock(3n, 3n), ch), record(X, unlock(1n, 1n), ch), record(X, unlock(2n, 2n), ch))
    expect(keysDue(q, 0)).toEqual([1n, 2n, 3n].map((i) => record(X, unlock(i, i), ch).key))
  })

  test('each message is retried on its own backoff until removed', () => {
    const q = queuesWith(record(X, secretRequest(1n)))
    expect(keysDue(q, 0)).toHaveLength(1)
    expect(keysDue(q, 99)).toHaveLength(0)
    expect(keysDue(q, 100)).toHaveLength(1)
    expect(keysDue(q, 299)).toHaveLength(0)
    expect(keysDue(q, 300)).toHaveLength(1)
    expect(q.nextDueAt()).toBe(700)
  })

  test('a due retry in a channel queue brings the earlier messages along; a first send goes alone', () => {
    const first = record(X, unlock(1n, 1n), ch)
    const second = record(X, unlock(2n, 2n), ch)
    const q = queuesWith(first)
    expect(keysDue(q, 0)).toEqual([first.key])
    expect(keysDue(q, 100)).toEqual([first.key]) // next at 300
    q.add(second, 120)
    expect(keysDue(q, 120)).toEqual([second.key]) // next at 220
    expect(keysDue(q, 220)).toEqual([first.key, second.key])
    // A first send does not drag the earlier ones along.
    const third = record(X, unlock(3n, 3n), ch)
    q.add(third, 230)
    expect(keysDue(q, 230)).toEqual([third.key])
  })

  test('what the transport failed to take goes with the next first send of its channel queue, and is due at once when a send to that peer goes through', () => {
    const first = record(X, unlock(1n, 1n), ch)
    const request = record(X, secretRequest(9n))
    const q = queuesWith(first, request)
    const sent = q.takeDue(0).due.get(X.toLowerCase())!
    q.lost(sent)
    // A new proof: its predecessor is not in flight, it goes first.
    const second = record(X, unlock(2n, 2n), ch)
    q.add(second, 10)
    expect(keysDue(q, 10)).toEqual([first.key, second.key])
    // Lost again, with the request; a send to Y going through changes nothing for X; one to X makes them due.
    q.lost([...q.takeDue(300).due.values()].flat())
    expect(q.reached(Y, 310)).toBe(0)
    expect(keysDue(q, 310)).toEqual([])
    expect(q.reached(X, 310)).toBe(3)
    expect(keysDue(q, 310).sort()).toEqual([first.key, second.key, request.key].sort())
    // Taken again, they are in flight: a send that goes through makes nothing more due.
    expect(q.reached(X, 320)).toBe(0)
  })

  test('a peer seen again makes everything to it due now with a fresh backoff, and nothing to others', () => {
    const q = queuesWith(record(X, secretRequest(1n)), record(Y, secretRequest(2n)))
    for (let t = 0; t < 1000; t += 100) keysDue(q, t)
    expect(q.peerSeen(X.toLowerCase() as Address, 1000)).toBe(1)
    expect(keysDue(q, 1000)).toEqual([record(X, secretRequest(1n)).key])
    expect(q.nextDueAt()).toBe(1100)
  })

  test('a message nothing acknowledges is sent once and reported finished', () => {
    const q = queuesWith(record(X, capacityUpdate(Y, X)))
    const { due, finished } = q.takeDue(0)
    expect(due.size).toBe(1)
    expect(finished).toEqual([record(X, capacityUpdate(Y, X)).key])
    expect(q.size).toBe(0)
  })

  test('a held record waits for release, with no retry time of its own; then it is due', () => {
    const left = record(X, secretRequest(1n))
    const q = new OutboxQueues(backoff)
    q.add(left, 0, true)
    expect(keysDue(q, 0)).toEqual([])
    expect(keysDue(q, 10_000)).toEqual([])
    expect(q.nextDueAt()).toBeUndefined()
    expect(pendingKeys(q)).toEqual([left.key])
    expect(q.release()).toBe(1)
    expect(keysDue(q, 10_000)).toEqual([left.key])
    expect(q.nextDueAt()).toBe(10_100)
    expect(q.release()).toBe(0)
  })

  test('a held record goes with a later message of its channel queue, in nonce order; other queues stay held', () => {
    const left = record(X, unlock(1n, 1n), ch)
    const elsewhere = record(X, unlock(5n, 1n), channelKeyOf(8n))
    const unordered = record(X, secretRequest(9n))
    const q = new OutboxQueues(backoff)
    for (const r of [left, elsewhere, unordered]) q.add(r, 0, true)
    const next = record(X, unlock(2n, 2n), ch)
    q.add(next, 50)
    expect(keysDue(q, 50)).toEqual([left.key, next.key])
    // Sent now, it is no longer held: it retries on the backoff, as the message it went with does.
    expect(keysDue(q, 149)).toEqual([])
    expect(keysDue(q, 150)).toEqual([left.key, next.key])
    expect(q.release()).toBe(2)
    expect(keysDue(q, 150).sort()).toEqual([elsewhere.key, unordered.key].sort())
  })

  test('a peer seen does not release what is held for it', () => {
    const q = new OutboxQueues(backoff)
    q.add(record(X, secretRequest(1n)), 0, true)
    expect(q.peerSeen(X, 30)).toBe(0)
    expect(keysDue(q, 30)).toEqual([])
    expect(q.release()).toBe(1)
    expect(keysDue(q, 30)).toEqual([record(X, secretRequest(1n)).key])
  })

  test('a key is queued once', () => {
    const q = new OutboxQueues(backoff)
    expect(q.add(record(X, secretRequest(1n)), 0)).toBe(true)
    expect(q.add(record(X, secretRequest(1n)), 0)).toBe(false)
    expect(q.size).toBe(1)
  })
})

describe('removal rules (docs/protocol.md §3.5)', () => {
  test('Processed(id) from X removes messages to X with that id from every queue', () => {
    const q = queuesWith(record(X, unlock(5n, 1n), ch), record(X, secretRequest(5n)), record(X, processed(5n)), record(X, unlock(6n, 2n), ch))
    expect(q.processed(X, 5n).sort()).toEqual([record(X, unlock(5n, 1n), ch).key, record(X, secretRequest(5n)).key, record(X, processed(5n)).key].sort())
    expect(pendingKeys(q)).toEqual([record(X, unlock(6n, 2n), ch).key])
  })

  test('Processed(id) from X leaves messages to other peers alone', () => {
    const q = queuesWith(record(X, unlock(5n, 1n), ch), record(Y, unlock(5n, 1n), ch))
    expect(q.processed(Y, 5n)).toEqual([record(Y, unlock(5n, 1n), ch).key])
    expect(pendingKeys(q)).toEqual([record(X, unlock(5n, 1n), ch).key])
  })

  test('Processed of a later message in a channel queue also removes the earlier ones, not later ones or other channels', () => {
    const other = channelKeyOf(8n)
    const q = queuesWith(
      record(X, unlock(1n, 1n), ch),
      record(X, unlock(2n, 2n), ch),
      record(X, unlock(3n, 3n), ch),
      record(X, unlock(4n, 1n, 8n), other),
      record(X, secretRequest(9n)),
    )
    expect(q.processed(X, 2n).sort()).toEqual([record(X, unlock(1n, 1n), ch).key, record(X, unlock(2n, 2n), ch).key].sort())
    expect(pendingKeys(q)).toEqual([record(X, unlock(3n, 3n), ch).key, record(X, unlock(4n, 1n, 8n), other).key, record(X, secretRequest(9n)).key].sort())
  })

  test('Delivered(id) removes only from the unordered queue', () => {
    const q = queuesWith(record(X, unlock(5n, 1n), ch), record(X, secretRequest(5n)), record(Y, secretRequest(5n)))
    expect(q.delivered(X, 5n)).toEqual([record(X, secretRequest(5n)).key])
    expect(pendingKeys(q)).toEqual([record(X, unlock(5n, 1n), ch).key, record(Y, secretRequest(5n)).key].sort())
  })

  test('a WithdrawRequest is removed only by a WithdrawConfirmation with its id, not by Processed, Delivered or a later Processed', () => {
    const request = record(X, withdrawRequest(5n, 1n, Y), ch)
    const q = queuesWith(request, record(X, unlock(6n, 2n), ch))
    expect(q.processed(X, 5n)).toEqual([])
    expect(q.delivered(X, 5n)).toEqual([])
    expect(q.processed(X, 6n)).toEqual([record(X, unlock(6n, 2n), ch).key])
    expect(q.withdrawConfirmed(X, 4n)).toEqual([])
    expect(q.withdrawConfirmed(Y, 5n)).toEqual([])
    expect(q.withdrawConfirmed(X, 5n)).toEqual([request.key])
    expect(q.size).toBe(0)
  })

  test('addresses match whatever their case', () => {
    const q = queuesWith(record(X, secretRequest(1n)))
    expect(q.delivered(X.toLowerCase() as Address, 1n)).toHaveLength(1)
  })
})
