import type { Address, Hex } from 'viem'
import type { InvalidMessageError, InvalidSignatureError } from '../protocol/errors.ts'
import { decodeMessage, type DecodedMessage } from '../protocol/messages/sign.ts'
import { encodeMessage } from '../protocol/messages/wire.ts'
import type { Message, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../protocol/messages/types.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'
import type { OutboxRecord } from '../storage/storage.ts'
import { awaitsStateAnswer, retrievableId } from './acknowledgement.ts'
import { defaultBackoff, type Backoff } from './backoff.ts'
import { Flusher } from './flusher.ts'
import { OutboxQueues } from './outboxQueues.ts'
import { ReceivedLedger } from './receivedLedger.ts'
import { RecentMap } from './recentMap.ts'
import type { Transport } from './transport.ts'

export type DeliveryParameters = {
  transport: Transport
  /** The node's curve engine: every incoming message's signer is recovered with it. */
  curve: Secp256k1Engine
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
  | { type: 'wrongSigner'; from: Address; signer: Address }
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
  /** Lines that did not decode, whose signature did not verify, or signed by this node. */
  invalid: number
  /** Lines signed by another than the peer whose stream carried them: dropped (docs/decisions/0064). */
  wrongSigner: number
  /** Messages received again (resends, replays): answered, not handed up twice. */
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
  /**
   * Hears the route announcements (PFSCapacityUpdate, PFSFeeUpdate) peers pass on, verified but from whoever signed
   * them, with the peer that carried them (docs/decisions/0074); before `start`. Without a listener they are dropped.
   */
  onAnnouncement(listener: (message: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>, from: Address) => void): void
  /**
   * Sends a message once, unacknowledged and never retried (a route announcement passed on: a lost one is replaced by
   * the next). A message signed already (an announcement, ours or another's) goes as it is.
   */
  sendOnce(to: Address, message: Message): void
  /** Opens the way to a peer we will send to (a channel partner) ahead of the first message: `Transport.connect`. */
  connect(peer: Address): void
  /** What is waiting for acknowledgement, with in-memory attempt counts. */
  pending(): OutboxRecord[]
  stats(): DeliveryStats
  /** Stops timers, waits for sends and receives in progress, then stops the transport. */
  stop(): Promise<void>
}

/** Creates the delivery layer between the runtime and `transport`: its flusher sends, its ledger of what was received dedupes. */
export function createDelivery(parameters: DeliveryParameters): Delivery {
  const { transport, sign, onMessage, log } = parameters
  let onAcknowledged = parameters.onAcknowledged
  let onAnnouncement: ((message: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>, from: Address) => void) | undefined
  const now = parameters.now ?? Date.now
  const backoff: Backoff = { ...defaultBackoff, ...parameters.backoff }
  const memory = parameters.memory ?? 4096
  const me = parameters.address.toLowerCase()

  const queues = new OutboxQueues(backoff)
  /** Lines already decoded and verified, by their exact text. */
  const verified = new RecentMap<string, DecodedMessage>(memory)
  const counts = { received: 0, invalid: 0, wrongSigner: 0, acknowledged: 0 }

  let started = false
  let stopped = false
  let receiving: Promise<void> = Promise.resolve()
  let resumeWhen: (() => Promise<unknown>) | undefined

  const acknowledge = (keys: string[]) => {
    if (keys.length === 0) return
    counts.acknowledged += keys.length
    try {
      onAcknowledged!(keys)
    } catch (error) {
      log?.({ type: 'handlerFailed', error })
    }
  }

  // A route announcement signed already (ours, or another's passed on) goes as it was signed.
  const signOrPass = (message: Message) =>
    (message.type === 'PFSCapacityUpdate' || message.type === 'PFSFeeUpdate') && 'signature' in message
      ? encodeMessage(message as Signed<Message>)
      : sign(message)
  const flusher = new Flusher({ queues, sign: signOrPass, send: (to, lines) => transport.send(to, lines), finished: acknowledge, now, ...(log ? { log } : {}) })
  const ledger = new ReceivedLedger({
    handUp: onMessage,
    onHandlerFailed: (error) => log?.({ type: 'handlerFailed', error }),
    memory,
    redeliverAfterMs: parameters.redeliverAfterMs ?? 5_000,
    now,
  })

  const releaseWhen = (when: () => Promise<unknown>) => {
    const release = () => {
      if (queues.release() > 0) flusher.schedule()
    }
    Promise.resolve().then(when).then(release, release)
  }

  const add = (records: readonly OutboxRecord[], held: boolean) => {
    if (stopped) return
    const t = now()
    for (const record of records) {
      ledger.answering(record)
      queues.add(record, t, held)
    }
    flusher.schedule()
  }

  /** Delivered(id) to `to`, once `applied` (if any) has made the message durable. */
  const deliveredAfter = (to: Address, id: bigint, applied: Promise<unknown> | undefined) => {
    const delivered: Message = { type: 'Delivered', delivered_message_identifier: id }
    if (!applied) return flusher.sendOnce(to, delivered)
    applied.then(
      () => {
        flusher.sendOnce(to, delivered)
        flusher.schedule()
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
          decoded = await decodeMessage(parameters.curve, line)
        } catch (error) {
          counts.invalid++
          log?.({ type: 'invalidLine', from, line, error: error as Error })
          continue
        }
        verified.set(line, decoded)
      }
      const { message, signer } = decoded
      if (signer.toLowerCase() === me) {
        counts.invalid++
        log?.({ type: 'ownMessage', from, line })
        continue
      }
      // Route announcements are passed on from peer to peer (docs/decisions/0074): signed by the channel's participant,
      // carried by whoever forwards them, and counted against that peer by the listener. Never acknowledged: a lost
      // one is replaced by the next.
      if (message.type === 'PFSCapacityUpdate' || message.type === 'PFSFeeUpdate') {
        counts.received++
        try {
          onAnnouncement?.(message, from)
        } catch (error) {
          log?.({ type: 'handlerFailed', error })
        }
        continue
      }
      // A peer speaks for itself only: no other message of the protocol is forwarded, and what one peer may send is
      // counted and limited by the peer that sends it (docs/decisions/0064).
      if (signer.toLowerCase() !== from.toLowerCase()) {
        counts.wrongSigner++
        log?.({ type: 'wrongSigner', from, signer })
        continue
      }
      counts.received++
      // A node keeps nobody's monitoring requests (a monitoring service does, with its own intake): none is handed up,
      // and none acknowledged, which would tell the sender it is held.
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
      const { applied, repeat } = ledger.take(message, signer, id, decoded.signerKey)
      for (const answer of repeat) flusher.sendOnce(signer, answer)
      // Delivered answers, for duplicates too (docs/protocol.md §3.5), what nothing else acknowledges: not balance proofs and
      // withdraw messages (their Processed or confirmation does), and not Processed (never retried). It goes
      // once the message is durable, at once if the handler does not say when.
      if (id !== undefined && !awaitsStateAnswer(message)) deliveredAfter(signer, id, applied)
    }
    acknowledge(done)
    flusher.schedule()
  }

  return {
    async start() {
      if (started) return
      if (!onAcknowledged) throw new Error('delivery starts once its acknowledgements are heard (onAcknowledged)')
      started = true
      flusher.start()
      transport.onPeerSeen?.((peer, publicKey) => {
        if (publicKey) parameters.onPeerKey?.(peer, publicKey)
        if (queues.peerSeen(peer, now()) > 0) flusher.schedule()
      })
      await transport.start((lines, from) => {
        if (stopped) return
        // One batch at a time, in arrival order: the state machine must see a channel's messages in order. The
        // transport reads the peer's next batch once this one is taken, and counts the time it took against the peer.
        const taken = receiving.then(async () => {
          const started = performance.now()
          await receive(lines, from)
          return performance.now() - started
        })
        receiving = taken.then(() => {})
        return taken
      })
      if (resumeWhen) releaseWhen(resumeWhen)
      flusher.schedule()
    },

    onAcknowledged(listener) {
      if (onAcknowledged) throw new Error("delivery's acknowledgements are heard already")
      onAcknowledged = listener
    },

    onAnnouncement(listener) {
      if (onAnnouncement) throw new Error("delivery's announcements are heard already")
      onAnnouncement = listener
    },

    sendOnce(to, message) {
      if (stopped || !started) return
      flusher.sendOnce(to, message)
      flusher.schedule()
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
      return { ...counts, ...flusher.stats, duplicates: ledger.duplicates, redelivered: ledger.redelivered, pending: queues.size }
    },

    async stop() {
      if (stopped) return
      stopped = true
      await flusher.stop()
      await receiving
      await transport.stop()
    },
  }
}
