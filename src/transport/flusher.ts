import type { Address } from 'viem'
import type { Message } from '../protocol/messages/types.ts'
import type { OutboxQueues, PendingMessage } from './outboxQueues.ts'
import { SerialByKey } from '../serialByKey.ts'

export type FlusherParameters = {
  queues: OutboxQueues
  /** Signs a message as this node and encodes it as one wire line (deterministic). */
  sign: (message: Message) => string | Promise<string>
  /** Hands lines to the transport (`Transport.send`): resolves when handed to the medium. */
  send: (to: Address, lines: string[]) => Promise<void>
  /** Outbox keys done once handed to the transport: what is sent once (`OutboxQueues.takeDue`'s `finished`). */
  finished: (keys: string[]) => void
  now: () => number
  log?: (event: FlusherLogEvent) => void
}

export type FlusherLogEvent = { type: 'sendFailed'; to: Address; error: unknown } | { type: 'signFailed'; key: string; error: unknown }

export type FlusherStats = { sendCalls: number; linesSent: number; retries: number }

/**
 * Delivery's sending side (docs/transport.md, Sending): takes what the outbox queues say is due, and the one-shot
 * messages (Delivered, repeated answers), signs them and hands them to the transport, one send per peer per flush,
 * and arms a timer for the next retry. Everything queued in the same tick goes out in one flush. Each peer's sends
 * are chained apart: batches to one peer keep their order, and a peer whose send stalls (up to the transport's
 * timeouts) holds up neither the other peers' messages nor the next flush.
 */
export class Flusher {
  readonly stats: FlusherStats = { sendCalls: 0, linesSent: 0, retries: 0 }
  readonly #parameters: FlusherParameters
  /** One-shot messages (Delivered, repeated answers) for the next flush, by lowercase address: never queued, never retried. */
  readonly #oneShot = new Map<string, { to: Address; messages: Message[] }>()
  /** Each peer's sends (lowercase address), one after the other. */
  readonly #sending = new SerialByKey()
  #running = false
  #stopped = false
  #scheduled = false
  #flushing: Promise<void> | undefined
  #again = false
  #timer: ReturnType<typeof setTimeout> | undefined

  constructor(parameters: FlusherParameters) {
    this.#parameters = parameters
  }

  /** Flushes from now on, at the next `schedule` (what was queued before waits for it). */
  start(): void {
    if (!this.#stopped) this.#running = true
  }

  /** A message for the next flush, sent once. */
  sendOnce(to: Address, message: Message): void {
    const slot = this.#oneShot.get(to.toLowerCase())
    if (slot) slot.messages.push(message)
    else this.#oneShot.set(to.toLowerCase(), { to, messages: [message] })
  }

  /** Flushes in a microtask: what else is queued in this tick goes with it. */
  schedule(): void {
    if (!this.#running || this.#scheduled) return
    this.#scheduled = true
    queueMicrotask(() => {
      this.#scheduled = false
      void this.#flush()
    })
  }

  /** Flushes no more and disarms its timer, then waits for the flush and the sends under way. */
  async stop(): Promise<void> {
    this.#running = false
    this.#stopped = true
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#flushing
    await this.#sending.idle()
  }

  #flush(): Promise<void> {
    if (this.#flushing) {
      this.#again = true
      return this.#flushing
    }
    this.#flushing = (async () => {
      do {
        this.#again = false
        await this.#flushOnce()
      } while (this.#again && this.#running)
    })().finally(() => {
      this.#flushing = undefined
      this.#arm()
    })
    return this.#flushing
  }

  async #flushOnce(): Promise<void> {
    if (!this.#running) return
    const { queues, log } = this.#parameters
    const { due, finished } = queues.takeDue(this.#parameters.now())
    const extra = new Map(this.#oneShot)
    this.#oneShot.clear()
    const peers = new Set([...extra.keys(), ...due.keys()])
    const sends: Promise<void>[] = []
    await Promise.all(
      [...peers].map(async (peer) => {
        const pendings = due.get(peer) ?? []
        const to = extra.get(peer)?.to ?? pendings[0]!.record.recipient
        const lines: string[] = []
        for (const message of extra.get(peer)?.messages ?? []) {
          try {
            lines.push(await this.#parameters.sign(message))
          } catch (error) {
            log?.({ type: 'signFailed', key: `one-shot ${message.type}`, error })
          }
        }
        for (const p of pendings) {
          const line = await this.#lineOf(p)
          if (line === undefined) continue
          lines.push(line)
          if (p.sends > 1) this.stats.retries++
        }
        if (lines.length === 0 || !this.#running) return
        this.stats.sendCalls++
        this.stats.linesSent += lines.length
        sends.push(this.#sendToPeer(peer, to, lines, pendings))
      }),
    )
    // What is sent once is done once it is handed to the transport.
    if (finished.length)
      void Promise.all(sends).then(() => {
        // Once stopped, the store may be closing: they stay in the outbox, and the next start sends them again.
        if (!this.#stopped) this.#parameters.finished(finished)
      })
  }

  /** The signed line of a pending message, made on its first send and kept (signing is deterministic). */
  async #lineOf(p: PendingMessage): Promise<string | undefined> {
    if (p.line === undefined) {
      try {
        p.line = await this.#parameters.sign(p.record.message)
      } catch (error) {
        this.#parameters.log?.({ type: 'signFailed', key: p.record.key, error })
        return undefined
      }
    }
    return p.line
  }

  /**
   * Hands `lines` to the transport after the send to `peer` under way, if any. A failed send is logged and its
   * messages marked lost (their retry is the queues'); one that goes through makes what was lost to that peer due now.
   */
  #sendToPeer(peer: string, to: Address, lines: string[], pendings: readonly PendingMessage[]): Promise<void> {
    const { queues, now, log } = this.#parameters
    return this.#sending.run(peer, () =>
      this.#parameters.send(to, lines).then(
        () => {
          if (queues.reached(peer, now()) > 0) this.schedule()
        },
        (error: unknown) => {
          queues.lost(pendings)
          log?.({ type: 'sendFailed', to, error })
        },
      ),
    )
  }

  /** A timer for the earliest retry due, if any. */
  #arm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
    if (!this.#running) return
    const next = this.#parameters.queues.nextDueAt()
    if (next === undefined) return
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined
        void this.#flush()
      },
      Math.max(0, next - this.#parameters.now()),
    )
  }
}
