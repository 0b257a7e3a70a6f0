import type { Address, Hex } from 'viem'
import { takesNonce } from '../protocol/channel/usedNonce.ts'
import type { Message, Signed } from '../protocol/messages/types.ts'
import type { OutboxRecord } from '../storage/storage.ts'
import { awaitsStateAnswer } from './acknowledgement.ts'
import { RecentMap } from './recentMap.ts'

export type ReceivedLedgerParameters = {
  /**
   * Hands a message up to the state machine; returns a promise that settles once it is durably applied, if it says
   * (delivery's `onMessage`). A throw is reported through `onHandlerFailed` and counts as not handed up.
   */
  handUp: (message: Signed<Message>, sender: Address, senderKey: Hex) => undefined | Promise<unknown>
  onHandlerFailed: (error: unknown) => void
  /** How many received messages (and our answers to them) to remember. */
  memory: number
  /** A balance proof or withdraw message not answered yet is handed up again once this long has passed. */
  redeliverAfterMs: number
  now: () => number
}

/** What became of a received message. */
export type Taken = {
  /** Settles once the message (or its first copy) is durably applied, if the handler said when. */
  applied: Promise<unknown> | undefined
  /** Our answers to it (Processed, WithdrawConfirmation) to send again at once: it is a resend of one we answered. */
  repeat: Message[]
}

/**
 * One received message: when it was last handed up, and (if the handler said) when that hand-up became durable.
 * `signature`: of the copy handed up (lower case), which a message under the same id must carry to be a resend of it.
 * `durable`: the handler's promise for it resolved (the state machine has it); until then a resend is not handed up again.
 */
type Received = { handedAt: number; signature: string; applied?: Promise<unknown>; failed?: boolean; durable?: boolean; progress?: number }

/** The channel a message that takes a nonce belongs to, as its signer's: `signer|token network|channel id`. */
const channelOf = (message: Message, signer: Address): string | undefined =>
  takesNonce(message) ? `${signer.toLowerCase()}|${message.token_network_address.toLowerCase()}|${message.channel_identifier}` : undefined

/**
 * Delivery's ledger of what was received (docs/transport.md, Receiving): which messages were handed up already (by
 * signer, type and id, and by signature), our answers to them, and whether a resend is handed up again. It decides
 * from what it holds and the clock; it neither decodes nor sends.
 */
export class ReceivedLedger {
  /** Received messages by `signer|type|id` and by signature (two keys each). */
  readonly #received: RecentMap<string, Received>
  /** Our answers (Processed, WithdrawConfirmation) by `peer|id`, to repeat at once when the peer resends. */
  readonly #answers: RecentMap<string, Message[]>
  /**
   * Per signer and channel, how many of its messages that take a nonce were handed up so far; each hand-up notes the
   * count it made (`Received.progress`).
   */
  readonly #progress: RecentMap<string, number>
  readonly #parameters: ReceivedLedgerParameters
  /** Resends not handed up again. */
  duplicates = 0
  /** Resends handed up again because the state machine had not answered them. */
  redelivered = 0

  constructor(parameters: ReceivedLedgerParameters) {
    this.#parameters = parameters
    this.#received = new RecentMap(parameters.memory * 2)
    this.#answers = new RecentMap(parameters.memory)
    this.#progress = new RecentMap(parameters.memory)
  }

  /** An outbox record we send: if it is an answer (Processed, WithdrawConfirmation), it is the one a resend gets. */
  answering(record: OutboxRecord): void {
    const type = record.message.type
    if (type !== 'Processed' && type !== 'WithdrawConfirmation') return
    const key = `${record.recipient.toLowerCase()}|${record.message.message_identifier}`
    this.#answers.set(key, [...(this.#answers.get(key) ?? []).filter((m) => m.type !== type), record.message])
  }

  /**
   * A verified message under `id` (`retrievableId`): hands it up unless it is a resend already handed up, and says
   * which of our answers to repeat. For a message that takes a nonce, a resend is the same signed message: another
   * one under an id already seen (a partner's second message under a nonce) is handed up for the core to compare,
   * and never answered with what the first got (docs/decisions/0029).
   */
  take(message: Signed<Message>, signer: Address, id: bigint | undefined, signerKey: Hex): Taken {
    const byId = id === undefined ? undefined : `${signer.toLowerCase()}|${message.type}|${id}`
    const bySignature = message.signature.toLowerCase()
    const sameId = byId === undefined ? undefined : this.#received.get(byId)
    const prior = (sameId && (sameId.signature === bySignature || !takesNonce(message)) ? sameId : undefined) ?? this.#received.get(bySignature)
    const now = this.#parameters.now()
    if (prior?.failed) {
      // Applying it failed (the handler reported why): this resend is the next chance.
      prior.handedAt = now
      return { applied: this.#hand(prior, message, signer, signerKey), repeat: [] }
    }
    if (prior) {
      this.duplicates++
      const answered = id === undefined ? undefined : this.#answers.get(`${signer.toLowerCase()}|${id}`)
      // Our Processed (or confirmation) was lost or is still retrying: repeat it now rather than at its next retry.
      if (answered) return { applied: prior.applied, repeat: [...answered] }
      // Still being applied (a busy machine: its commit waits): the state machine has not had it yet, nothing to redo.
      const applying = prior.applied !== undefined && !prior.durable
      // Another message of its channel was handed up since: one this one waited for, maybe (it was refused for a nonce
      // gap, its predecessors lost in a partition and now resent before it). Handed up again at once: waiting out
      // `redeliverAfterMs` would hold it, and every later message of the channel behind it, for seconds each.
      const channel = channelOf(message, signer)
      const moved = channel !== undefined && (this.#progress.get(channel) ?? 0) > (prior.progress ?? 0)
      if (!awaitsStateAnswer(message) || applying || (!moved && now - prior.handedAt < this.#parameters.redeliverAfterMs))
        return { applied: prior.applied, repeat: [] }
      prior.handedAt = now
      this.redelivered++
      return { applied: this.#hand(prior, message, signer, signerKey), repeat: [] }
    }
    const entry: Received = { handedAt: now, signature: bySignature }
    // The first message under an id keeps it: a resend of that one is still recognised (and answered) by it.
    if (byId !== undefined && !sameId) this.#received.set(byId, entry)
    this.#received.set(bySignature, entry)
    return { applied: this.#hand(entry, message, signer, signerKey), repeat: [] }
  }

  #hand(entry: Received, message: Signed<Message>, signer: Address, signerKey: Hex): Promise<unknown> | undefined {
    const channel = channelOf(message, signer)
    if (channel !== undefined) {
      entry.progress = (this.#progress.get(channel) ?? 0) + 1
      this.#progress.set(channel, entry.progress)
    }
    entry.failed = false
    entry.applied = undefined
    entry.durable = false
    try {
      const applied = this.#parameters.handUp(message, signer, signerKey)
      if (!applied) return undefined
      entry.applied = applied
      applied.then(
        () => {
          if (entry.applied === applied) entry.durable = true
        },
        // A failed apply is the handler's to report; here it only means no Delivered, and the next resend is handed up.
        () => {
          if (entry.applied === applied) entry.failed = true
        },
      )
      return applied
    } catch (error) {
      this.#parameters.onHandlerFailed(error)
      return undefined
    }
  }
}
