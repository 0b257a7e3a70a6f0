import type { Address } from 'viem'
import type { Message } from '../protocol/messages/types.ts'
import type { OutboxRecord } from '../storage/storage.ts'
import { retrievableId } from './acknowledgement.ts'
import { retryDelay, type Backoff } from './backoff.ts'

/** One message waiting for its acknowledgement, with its retry schedule (kept in memory only). */
export type PendingMessage = {
  readonly record: OutboxRecord
  readonly peer: string
  readonly id: bigint | undefined
  /** Enqueue order: breaks ties in a channel queue and orders everything else. */
  readonly seq: number
  /** Sends since the last reset (the backoff exponent); reset when the peer is seen again. */
  attempts: number
  nextAttemptAt: number
  /** Every send, for statistics. */
  sends: number
  /** The signed wire line, made on the first send: signing is deterministic, so it never changes. */
  line?: string
  /** Its last send failed: the transport did not take it (the peer was out of reach), so it is not in flight. */
  lost: boolean
  /**
   * Left by the last run and not to be sent on its own until `release`, even to a peer seen again: it still goes
   * with a later message of its channel queue, which the receiver accepts only after it.
   */
  held: boolean
}

/** What is due now, per recipient (lowercase address), in sending order. */
export type DueMessages = Map<string, PendingMessage[]>

const nonceOf = (message: Message): bigint | undefined => ('nonce' in message ? message.nonce : undefined)

/** Channel-queue order: by nonce (what the receiver enforces), then by enqueue order. */
function before(a: PendingMessage, b: PendingMessage): boolean {
  const na = nonceOf(a.record.message)
  const nb = nonceOf(b.record.message)
  if (na !== undefined && nb !== undefined && na !== nb) return na < nb
  return a.seq < b.seq
}

const queueOf = (p: PendingMessage) => (p.record.channelKey === undefined ? undefined : `${p.peer}|${p.record.channelKey}`)

/**
 * The messages waiting for acknowledgement, in Raiden's queues (docs/protocol.md §3.5): one ordered queue per
 * (recipient, channel) for balance proofs and withdraw messages, one unordered queue per recipient for the rest.
 * Applies the removal rules and decides what is due; it keeps no timers and does no I/O.
 */
export class OutboxQueues {
  readonly #pending = new Map<string, PendingMessage>()
  #seq = 0

  constructor(readonly backoff: Backoff) {}

  get size(): number {
    return this.#pending.size
  }

  /** Adds a record, due at once unless `held`; false if its key is already pending (a record is queued once). */
  add(record: OutboxRecord, now: number, held = false): boolean {
    if (this.#pending.has(record.key)) return false
    this.#pending.set(record.key, {
      record,
      peer: record.recipient.toLowerCase(),
      id: retrievableId(record.message),
      seq: this.#seq++,
      attempts: 0,
      nextAttemptAt: now,
      sends: 0,
      held,
      lost: false,
    })
    return true
  }

  /** The held records are due now. */
  release(): number {
    let count = 0
    for (const p of this.#pending.values())
      if (p.held) {
        p.held = false
        count++
      }
    return count
  }

  /** Removes these keys; returns those that were pending. */
  remove(keys: readonly string[]): string[] {
    return keys.filter((key) => this.#pending.delete(key))
  }

  /** The pending records, with their in-memory attempt counts. */
  records(): OutboxRecord[] {
    return [...this.#pending.values()].map((p) => ({ ...p.record, attempts: p.attempts, nextAttemptAt: p.nextAttemptAt }))
  }

  /** When the earliest retry is due, or undefined if nothing is pending. */
  nextDueAt(): number | undefined {
    let next: number | undefined
    for (const p of this.#pending.values()) if (!p.held && (next === undefined || p.nextAttemptAt < next)) next = p.nextAttemptAt
    return next
  }

  /** The peer is back: everything to it is due now (but what is held), and its backoff starts over. */
  peerSeen(peer: Address, now: number): number {
    let count = 0
    for (const p of this.#pending.values())
      if (p.peer === peer.toLowerCase()) {
        p.attempts = 0
        p.nextAttemptAt = now
        if (!p.held) count++
      }
    return count
  }

  /** The transport failed to take these (`takeDue`'s): they are not in flight, and go along with their successors. */
  lost(messages: readonly PendingMessage[]): void {
    for (const p of messages) if (this.#pending.get(p.record.key) === p) p.lost = true
  }

  /**
   * The transport took a send to `peer`: it is in reach again, so what was lost on the way to it is due now, not at
   * its backoff timer (a minute away after a long cut). Returns how many.
   */
  reached(peer: string, now: number): number {
    let count = 0
    for (const p of this.#pending.values())
      if (p.lost && p.peer === peer.toLowerCase() && !p.held && p.nextAttemptAt > now) {
        p.nextAttemptAt = now
        count++
      }
    return count
  }

  /**
   * Takes what is due at `now` and schedules its next attempt. In a channel queue a due retry brings along the
   * messages before it, in nonce order: the receiver accepts a balance proof only after its predecessors, so
   * resending one alone is useless if an earlier one was lost. First sends go alone (the earlier ones are in
   * flight), but for the held ones before them and those whose last send was `lost` (after a cut, a new payment's
   * proof would otherwise go first and be refused for a nonce gap). Messages nothing acknowledges (no id: `retrievableId`) are sent
   * once and listed in `finished`, and so is Processed: a lost Processed shows as a resend of what it
   * acknowledged, which is answered with it again (as the light client does), so it needs no Delivered and no
   * retry of its own.
   */
  takeDue(now: number): { due: DueMessages; finished: string[] } {
    const due: DueMessages = new Map()
    const finished: string[] = []
    const channelQueues = new Map<string, PendingMessage[]>()
    const chosen: PendingMessage[] = []
    for (const p of this.#pending.values()) {
      const queue = queueOf(p)
      if (queue === undefined) {
        if (!p.held && p.nextAttemptAt <= now) chosen.push(p)
      } else {
        const list = channelQueues.get(queue)
        if (list) list.push(p)
        else channelQueues.set(queue, [p])
      }
    }
    for (const list of channelQueues.values()) {
      list.sort((a, b) => (before(a, b) ? -1 : 1))
      let last = list.length - 1
      while (last >= 0 && (list[last]!.held || list[last]!.nextAttemptAt > now)) last--
      if (last < 0) continue
      const retrying = list.slice(0, last + 1).some((p) => p.nextAttemptAt <= now && p.attempts > 0)
      chosen.push(...list.slice(0, last + 1).filter((p) => retrying || p.held || p.lost || p.nextAttemptAt <= now))
    }
    for (const p of chosen) {
      p.held = false
      p.lost = false
      p.attempts++
      p.sends++
      p.nextAttemptAt = now + retryDelay(this.backoff, p.attempts)
      const list = due.get(p.peer)
      if (list) list.push(p)
      else due.set(p.peer, [p])
      if (p.id === undefined || p.record.message.type === 'Processed') {
        this.#pending.delete(p.record.key)
        finished.push(p.record.key)
      }
    }
    return { due, finished }
  }

  /**
   * `Processed(id)` from `peer`: removes every message to it with that id, from all queues, except a
   * WithdrawRequest (only its WithdrawConfirmation answers it). A Processed of a channel-queue message also
   * proves its predecessors were applied (the receiver enforces nonce order), so they go too: a lost Processed
   * then never leaves an older message retrying forever.
   */
  processed(peer: Address, id: bigint): string[] {
    const from = peer.toLowerCase()
    const hits = this.#select((p) => p.peer === from && p.id === id && p.record.message.type !== 'WithdrawRequest')
    const implied = this.#select(
      (p) => p.record.message.type !== 'WithdrawRequest' && hits.some((hit) => queueOf(hit) !== undefined && queueOf(hit) === queueOf(p) && before(p, hit)),
    )
    return this.remove([...hits, ...implied].map((p) => p.record.key))
  }

  /** `Delivered(id)` from `peer`: removes messages to it with that id from its unordered queue only. */
  delivered(peer: Address, id: bigint): string[] {
    const from = peer.toLowerCase()
    return this.remove(this.#select((p) => p.peer === from && p.id === id && p.record.channelKey === undefined).map((p) => p.record.key))
  }

  /** `WithdrawConfirmation` with `id` from `peer`: removes our WithdrawRequest to it with that id. */
  withdrawConfirmed(peer: Address, id: bigint): string[] {
    const from = peer.toLowerCase()
    return this.remove(this.#select((p) => p.peer === from && p.id === id && p.record.message.type === 'WithdrawRequest').map((p) => p.record.key))
  }

  #select(predicate: (p: PendingMessage) => boolean): PendingMessage[] {
    return [...this.#pending.values()].filter(predicate)
  }
}
