import type { Address, Hex } from 'viem'
import type { InvalidMessageError, InvalidSignatureError } from '../protocol/errors.ts'
import { takesNonce } from '../protocol/channel/usedNonce.ts'
import { decodeMessage, type DecodedMessage } from '../protocol/messages/sign.ts'
import type { Message, Signed } from '../protocol/messages/types.ts'
import type { OutboxRecord } from '../storage/storage.ts'
import { awaitsStateAnswer, retrievableId } from './acknowledgement.ts'
import { defaultBackoff, type Backoff } from './backoff.ts'
import { OutboxQueues, type PendingMessage } from './outboxQueues.ts'
import { RecentMap } from './recentMap.ts'
import type { Transport } from './transport.ts'

export type DeliveryParameters = {
  transport: Transport
  /** This node's address: messages signed by it that come back are dropped. */
  address: Address
  /** Signs a message as this node and encodes it as one wire line (deterministic: the same message, the same line). */
  sign: (message: Message) => string | Promise<string>
  /**
   * A verified message for the state machine, with its recovered signer (never the transport's claim) and the
   * signer's public key.
   * Delivered and Processed are consumed here and not handed up; everything else is, once (see `redeliverAfterMs`).
   * Return a promise that settles once the message is durably applied: the Delivered that acknowledges it (a
   * SecretRequest, a RevealSecret) then waits for it, and is not sent if it rejects. Otherwise a crash between
   * our Delivered and the commit would lose a message its sender no longer retries.
   */
  onMessage: (message: Signed<Message>, sender: Address, senderKey: Hex) => undefined | Promise<unknown>
  /**
   * Outbox keys that are done (acknowledged, or sent once if nothing acknowledges them): delete them in the next commit.
   * Or subscribed later with `onAcknowledged`, when what hears them is made after delivery (it sends through it).
   */
  onAcknowledged?: (keys: string[]) => void
  /** Retry schedule; defaults to 300 ms doubling up to 60 s. */
  backoff?: Partial<Backoff>
  now?: () => number
  /** How many received messages (and our answers to them) to remember for deduplication. Default 4096. */
  memory?: number
  /**
   * A resend of a balance proof or withdraw message that the state machine has not answered yet (no Processed
   * or WithdrawConfirmation from us) is handed up again once this long has passed since it last was: the state
   * machine may accept now what it refused before (it had not yet seen the channel on chain, say). Default 5 s.
   */
  redeliverAfterMs?: number
  /** Told about what is dropped or fails: for logs and metrics. */
  log?: (event: DeliveryLogEvent) => void
  /** A peer's public key as the transport authenticated it (`Transport.onPeerSeen`), before any message of it. */
  onPeerKey?: (peer: Address, publicKey: Hex) => void
}

export type DeliveryLogEvent =
  | { type: 'invalidLine'; from: Address; line: string; error: InvalidMessageError | InvalidSignatureError | Error }
  | { type: 'ownMessage'; from: Address; line: string }
  | { type: 'sendFailed'; to: Address; error: unknown }
  | { type: 'signFailed'; key: string; error: unknown }
  | { type: 'handlerFailed'; error: unknown }

export type DeliveryStats = {
  /** Messages waiting for acknowledgement. */
  pending: number
  sendCalls: number
  linesSent: number
  /** Sends of a message after its first one. */
  retries: number
  /** Valid messages received (duplicates included). */
  received: number
  invalid: number
  duplicates: number
  /** Duplicates handed up again because the state machine had not answered them (`redeliverAfterMs`). */
  redelivered: number
  /** Outbox keys reported done through `onAcknowledged`. */
  acknowledged: number
}

/**
 * At-least-once delivery of protocol messages over a best-effort Transport (docs/protocol.md §3.5, docs/transport.md).
 * The runtime hands it outbox records it has already committed, and deletes the keys it reports done.
 */
export type Delivery = {
  /**
   * Starts the transport, then sends everything enqueued so far. Refused until its acknowledgements are heard (the
   * parameter, or `onAcknowledged`): nothing is acknowledged before it starts, so none is lost.
   */
  start(): Promise<void>
  /** Hears the keys that are done, as the `onAcknowledged` parameter does, when that was not given; before `start`. */
  onAcknowledged(listener: (keys: string[]) => void): void
  /**
   * Sends these committed outbox records at once, then retries each with backoff until acknowledged. Also how
   * to resume after a restart: enqueue `Loaded.outbox`. A key already pending is ignored. Records' stored
   * `attempts`/`nextAttemptAt` are not used: the schedule lives in memory and starts over. Ignored after `stop`
   * (the records are durable: the next start resends them).
   */
  enqueue(records: readonly OutboxRecord[]): void
  /**
   * Resumes what the last run left unacknowledged (`Loaded.outbox`) as `enqueue` does, but held until `when()`
   * (called at `start`) resolves: a host can answer its first requests before it signs these and loads its
   * transport for them (docs/decisions/0024). A held message still goes at once with a later message of its
   * channel queue (the receiver takes that one only after it).
   */
  resume(records: readonly OutboxRecord[], when?: () => Promise<unknown>): void
  /** Stops retrying these keys (the runtime no longer wants them sent: an expired withdraw, a settled channel). */
  cancel(keys: readonly string[]): void
  /** Opens the way to a peer we will send to (a channel partner) ahead of the first message: `Transport.connect`. */
  connect(peer: Address): void
  /** What is waiting for acknowledgement, with in-memory attempt counts. */
  pending(): OutboxRecord[]
  stats(): DeliveryStats
  /** Stops timers, waits for sends and receives in progress, then stops the transport. */
  stop(): Promise<void>
}

/** When a received message was last handed up, and (if the handler said) when that hand-up became durable. */
/** `signature`: of the copy handed up (lower case), which a message under the same id must carry to be a resend of it. */
/** `durable`: the handler's promise for it resolved (the state machine has it); until then a resend is not handed up again. */
type Received = { handedAt: number; signature: string; applied?: Promise<unknown>; failed?: boolean; durable?: boolean }

/** Creates the delivery layer between the runtime and `transport`. */
export function createDelivery(parameters: DeliveryParameters): Delivery {
  const { transport, sign, onMessage, log } = parameters
  let onAcknowledged = parameters.onAcknowledged
  const now = parameters.now ?? Date.now
  const backoff: Backoff = { ...defaultBackoff, ...parameters.backoff }
  const memory = parameters.memory ?? 4096
  const redeliverAfterMs = parameters.redeliverAfterMs ?? 5_000
  const me = parameters.address.toLowerCase()

  const queues = new OutboxQueues(backoff)
  /** Received messages by `signer|type|id` and by signature (two keys each). */
  const received = new RecentMap<string, Received>(memory * 2)
  /** Our answers (Processed, WithdrawConfirmation) by `peer|id`, to repeat at once when the peer resends. */
  const answers = new RecentMap<string, Message[]>(memory)
  /** Lines already decoded and verified, by their exact text. */
  const verified = new RecentMap<string, DecodedMessage>(memory)
  /** One-shot messages (Delivered, repeated answers) for the next flush: never queued, never retried. */
  const oneShot = new Map<string, { to: Address; messages: Message[] }>()
  const stats: DeliveryStats = { pending: 0, sendCalls: 0, linesSent: 0, retries: 0, received: 0, invalid: 0, duplicates: 0, redelivered: 0, acknowledged: 0 }

  let started = false
  let stopped = false
  let flushScheduled = false
  let flushing: Promise<void> | undefined
  /** The last send to each peer (lowercase address) still under way. */
  const sending = new Map<string, Promise<void>>()
  let flushAgain = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let receiving: Promise<void> = Promise.resolve()
  let resumeWhen: (() => Promise<unknown>) | undefined
  const releaseWhen = (when: () => Promise<unknown>) => {
    const release = () => {
      if (queues.release() > 0) scheduleFlush()
    }
    Promise.resolve().then(when).then(release, release)
  }

  const add = (records: readonly OutboxRecord[], held: boolean) => {
    if (stopped) return
    const t = now()
    for (const record of records) {
      rememberAnswer(record)
      queues.add(record, t, held)
    }
    scheduleFlush()
  }

  const acknowledge = (keys: string[]) => {
    if (keys.length === 0) return
    stats.acknowledged += keys.length
    try {
      onAcknowledged!(keys)
    } catch (error) {
      log?.({ type: 'handlerFailed', error })
    }
  }

  const sendOnce = (to: Address, message: Message) => {
    const slot = oneShot.get(to.toLowerCase())
    if (slot) slot.messages.push(message)
    else oneShot.set(to.toLowerCase(), { to, messages: [message] })
  }

  const rememberAnswer = (record: OutboxRecord) => {
    const type = record.message.type
    if (type !== 'Processed' && type !== 'WithdrawConfirmation') return
    const key = `${record.recipient.toLowerCase()}|${record.message.message_identifier}`
    answers.set(key, [...(answers.get(key) ?? []).filter((m) => m.type !== type), record.message])
  }

  // Batching: everything enqueued or answered in the same tick goes out in one flush, one send per peer.
  const scheduleFlush = () => {
    if (!started || stopped || flushScheduled) return
    flushScheduled = true
    queueMicrotask(() => {
      flushScheduled = false
      void flush()
    })
  }

  const flush = (): Promise<void> => {
    if (flushing) {
      flushAgain = true
      return flushing
    }
    flushing = (async () => {
      do {
        flushAgain = false
        await flushOnce()
      } while (flushAgain && !stopped)
    })().finally(() => {
      flushing = undefined
      armTimer()
    })
    return flushing
  }

  const lineOf = async (p: PendingMessage): Promise<string | undefined> => {
    if (p.line === undefined) {
      try {
        p.line = await sign(p.record.message)
      } catch (error) {
        log?.({ type: 'signFailed', key: p.record.key, error })
        return undefined
      }
    }
    return p.line
  }

  /**
   * Hands `lines` to the transport after the send to `peer` under way, if any: batches to one peer keep their order,
   * and a peer whose send takes long (a stalled stream waits up to the transport's timeout) holds up no other peer's
   * messages, nor the next flush.
   */
  const sendToPeer = (peer: string, to: Address, lines: string[]): Promise<void> => {
    const previous = sending.get(peer) ?? Promise.resolve()
    const send = previous.then(() =>
      transport.send(to, lines).catch((error: unknown) => {
        log?.({ type: 'sendFailed', to, error })
      }),
    )
    sending.set(peer, send)
    void send.then(() => {
      if (sending.get(peer) === send) sending.delete(peer)
    })
    return send
  }

  const flushOnce = async () => {
    if (stopped) return
    const { due, finished } = queues.takeDue(now())
    const extra = new Map(oneShot)
    oneShot.clear()
    const peers = new Set([...extra.keys(), ...due.keys()])
    const sends: Promise<void>[] = []
    await Promise.all(
      [...peers].map(async (peer) => {
        const pendings = due.get(peer) ?? []
        const to = extra.get(peer)?.to ?? pendings[0]!.record.recipient
        const lines: string[] = []
        for (const message of extra.get(peer)?.messages ?? []) {
          try {
            lines.push(await sign(message))
          } catch (error) {
            log?.({ type: 'signFailed', key: `one-shot ${message.type}`, error })
          }
        }
        for (const p of pendings) {
          const line = await lineOf(p)
          if (line === undefined) continue
          lines.push(line)
          if (p.sends > 1) stats.retries++
        }
        if (lines.length === 0 || stopped) return
        stats.sendCalls++
        stats.linesSent += lines.length
        sends.push(sendToPeer(peer, to, lines))
      }),
    )
    // What is sent once is done once it is handed to the transport.
    if (finished.length)
      void Promise.all(sends).then(() => {
        // Once stopped, the store may be closing: they stay in the outbox, and the next start sends them again.
        if (!stopped) acknowledge(finished)
      })
  }

  const armTimer = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    if (!started || stopped) return
    const next = queues.nextDueAt()
    if (next === undefined) return
    timer = setTimeout(
      () => {
        timer = undefined
        void flush()
      },
      Math.max(0, next - now()),
    )
  }

  /**
   * Hands a message up unless it is a resend already handed up; answers what we already answered. Returns when
   * the message (or its first copy) is durably applied, if the handler tells. For a message that takes a nonce, a
   * resend is the same signed message: another one under an id already seen (a partner's second message under a
   * nonce) is handed up for the core to compare, and never answered with what the first got (docs/decisions/0029).
   */
  const handUp = (message: Signed<Message>, signer: Address, id: bigint | undefined, signerKey: Hex): Promise<unknown> | undefined => {
    const byId = id === undefined ? undefined : `${signer.toLowerCase()}|${message.type}|${id}`
    const bySignature = message.signature.toLowerCase()
    const sameId = byId === undefined ? undefined : received.get(byId)
    const prior = (sameId && (sameId.signature === bySignature || !takesNonce(message)) ? sameId : undefined) ?? received.get(bySignature)
    if (prior?.failed) {
      // Applying it failed (the handler reported why): this resend is the next chance.
      prior.handedAt = now()
      return hand(prior, message, signer, signerKey)
    }
    if (prior) {
      stats.duplicates++
      const answered = id === undefined ? undefined : answers.get(`${signer.toLowerCase()}|${id}`)
      if (answered) {
        // Our Processed (or confirmation) was lost or is still retrying: repeat it now rather than at its next retry.
        for (const answer of answered) sendOnce(signer, answer)
        return prior.applied
      }
      // Still being applied (a busy machine: its commit waits): the state machine has not had it yet, nothing to redo.
      const applying = prior.applied !== undefined && !prior.durable
      if (!awaitsStateAnswer(message) || applying || now() - prior.handedAt < redeliverAfterMs) return prior.applied
      prior.handedAt = now()
      stats.redelivered++
      return hand(prior, message, signer, signerKey)
    }
    const entry: Received = { handedAt: now(), signature: bySignature }
    // The first message under an id keeps it: a resend of that one is still recognised (and answered) by it.
    if (byId !== undefined && !sameId) received.set(byId, entry)
    received.set(bySignature, entry)
    return hand(entry, message, signer, signerKey)
  }

  const hand = (entry: Received, message: Signed<Message>, signer: Address, signerKey: Hex): Promise<unknown> | undefined => {
    entry.failed = false
    entry.applied = undefined
    entry.durable = false
    try {
      const applied = onMessage(message, signer, signerKey)
      if (!applied) return undefined
      entry.applied = applied
      applied.then(
        () => {
          if (entry.applied === applied) entry.durable = true
        },
        () => {},
      )
      // A failed apply is the handler's to report; here it only means no Delivered, and the next resend is handed up.
      applied.catch(() => {
        if (entry.applied === applied) entry.failed = true
      })
      return applied
    } catch (error) {
      log?.({ type: 'handlerFailed', error })
      return undefined
    }
  }

  /** Delivered(id) to `to`, once `applied` (if any) has made the message durable. */
  const deliveredAfter = (to: Address, id: bigint, applied: Promise<unknown> | undefined) => {
    const delivered: Message = { type: 'Delivered', delivered_message_identifier: id }
    if (!applied) return sendOnce(to, delivered)
    applied.then(
      () => {
        sendOnce(to, delivered)
        scheduleFlush()
      },
      () => {},
    )
  }

  const receive = async (lines: string[], from: Address) => {
    const done: string[] = []
    for (const line of lines) {
      if (stopped) return
      // A resend is the same text: its signer was recovered already (recovery is the costly part).
      let decoded = verified.get(line)
      if (!decoded) {
        try {
          decoded = await decodeMessage(line)
        } catch (error) {
          stats.invalid++
          log?.({ type: 'invalidLine', from, line, error: error as Error })
          continue
        }
        verified.set(line, decoded)
      }
      const { message, signer } = decoded
      if (signer.toLowerCase() === me) {
        stats.invalid++
        log?.({ type: 'ownMessage', from, line })
        continue
      }
      stats.received++
      // A node keeps nobody's monitoring requests (a monitoring service does, with its own intake): none is handed
      // up, and none acknowledged, which would tell the requester it is guarded when it is not.
      if (message.type === 'RequestMonitoring') continue
      if (message.type === 'Delivered') {
        done.push(...queues.delivered(signer, message.delivered_message_identifier))
        continue
      }
      const id = retrievableId(message)
      if (message.type === 'Processed') {
        done.push(...queues.processed(signer, message.message_identifier))
        continue
      }
      if (message.type === 'WithdrawConfirmation') done.push(...queues.withdrawConfirmed(signer, message.message_identifier))
      const applied = handUp(message, signer, id, decoded.signerKey)
      // Delivered answers, for duplicates too (docs/protocol.md §3.5), what nothing else acknowledges: not balance proofs and
      // withdraw messages (their Processed or confirmation does), and not Processed (never retried). It goes
      // once the message is durable, at once if the handler does not say when.
      if (id !== undefined && !awaitsStateAnswer(message)) deliveredAfter(signer, id, applied)
    }
    acknowledge(done)
    scheduleFlush()
  }

  return {
    async start() {
      if (started) return
      if (!onAcknowledged) throw new Error('delivery starts once its acknowledgements are heard (onAcknowledged)')
      started = true
      transport.onPeerSeen?.((peer, publicKey) => {
        if (publicKey) parameters.onPeerKey?.(peer, publicKey)
        if (queues.peerSeen(peer, now()) > 0) scheduleFlush()
      })
      await transport.start((lines, from) => {
        if (stopped) return
        // One batch at a time, in arrival order: the state machine must see a channel's messages in order.
        receiving = receiving.then(() => receive(lines, from))
      })
      if (resumeWhen) releaseWhen(resumeWhen)
      scheduleFlush()
    },

    onAcknowledged(listener) {
      if (onAcknowledged) throw new Error("delivery's acknowledgements are heard already")
      onAcknowledged = listener
    },

    connect(peer) {
      if (!stopped) transport.connect?.(peer)
    },

    enqueue(records) {
      add(records, false)
    },

    resume(records, when) {
      add(records, when !== undefined)
      if (when && started) releaseWhen(when)
      else if (when) resumeWhen = when
    },

    cancel(keys) {
      queues.remove(keys)
    },

    pending() {
      return queues.records()
    },

    stats() {
      return { ...stats, pending: queues.size }
    },

    async stop() {
      if (stopped) return
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      await flushing
      await Promise.all(sending.values())
      await receiving
      await transport.stop()
    },
  }
}
