import type { Address } from 'viem'
import type { Effect, NodeEvent } from '../../protocol/state/effects.ts'
import { sha256 } from 'viem'
import { balanceHash } from '../../protocol/balanceProof.ts'
import { channelKey } from '../../protocol/channel/key.ts'
import { signedCopy, takesNonce } from '../../protocol/channel/usedNonce.ts'
import { sameAddress } from '../../protocol/state/access.ts'
import type { StateChange } from '../../protocol/state/changes.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import type { OutboxRecord, PaymentRecord, ReceivedRecord, SentLockRecord, SentProofRecord, StoredEvent, TransactionRecord } from '../../storage/storage.ts'

/** The outbox key of a message: unique per recipient, type and message identifier. */
export function outboxKey(recipient: Address, type: string, messageIdentifier: bigint): string {
  return `${recipient.toLowerCase()}:${type}:${messageIdentifier}`
}

function messageId(message: Extract<Effect, { type: 'send' }>['message']): bigint {
  if ('message_identifier' in message) return message.message_identifier
  if ('delivered_message_identifier' in message) return message.delivered_message_identifier
  return 0n
}

export function outboxRecord(effect: Extract<Effect, { type: 'send' }>, now: number): OutboxRecord {
  return {
    key: outboxKey(effect.recipient, effect.message.type, messageId(effect.message)),
    recipient: effect.recipient,
    message: effect.message,
    ...(effect.channelKey ? { channelKey: effect.channelKey } : {}),
    queuedAt: now,
    attempts: 0,
    nextAttemptAt: now,
  }
}

export function transactionRecord(effect: Extract<Effect, { type: 'transaction' }>, seq: number, index: number, now: number): TransactionRecord {
  return { key: `tx:${String(seq).padStart(12, '0')}:${index}`, transaction: effect.transaction, createdAt: now, status: 'pending' }
}

/** The payment history row an event makes, if it is one of the payment events (a mediation's too). */
export function paymentRecord(event: NodeEvent, seq: number, time: number): PaymentRecord | undefined {
  switch (event.type) {
    case 'paymentSentSuccess':
      return {
        seq,
        time,
        event: 'EventPaymentSentSuccess',
        token: event.token,
        partner: event.target,
        amount: event.amount,
        identifier: event.paymentId,
        secrethash: event.secrethash,
        secret: event.secret,
        route: event.route,
        fee: event.fee,
      }
    case 'paymentSentFailed':
      return {
        seq,
        time,
        event: 'EventPaymentSentFailed',
        token: event.token,
        partner: event.target,
        amount: event.amount,
        identifier: event.paymentId,
        secrethash: event.secrethash,
        reason: event.reason,
      }
    case 'paymentReceivedSuccess':
      return {
        seq,
        time,
        event: 'EventPaymentReceivedSuccess',
        token: event.token,
        partner: event.initiator,
        amount: event.amount,
        identifier: event.paymentId,
        secrethash: event.secrethash,
      }
    case 'mediationSucceeded':
      return {
        seq,
        time,
        event: 'EventPaymentMediated',
        token: event.token,
        partner: event.initiator,
        target: event.target,
        amount: event.amount,
        fee: event.fee,
        identifier: event.paymentId,
        secrethash: event.secrethash,
      }
    default:
      return undefined
  }
}

export function storedEvent(event: NodeEvent, seq: number, time: number): StoredEvent {
  return { seq, time, event }
}

/**
 * What a balance-proof message we send leaves in the stored history: the proof by its balance hash, and our lock
 * it added (with the nonce it came in) or removed (with the nonce it left in). `before` is the state before the
 * transition that sent it, which still holds the lock being removed and the nonce that added it.
 */
export function sentHistory(effect: Extract<Effect, { type: 'send' }>, before: NodeState): { proof?: SentProofRecord; lock?: SentLockRecord } {
  const m = effect.message
  const channelKey = effect.channelKey
  if (!channelKey || (m.type !== 'LockedTransfer' && m.type !== 'RefundTransfer' && m.type !== 'Unlock' && m.type !== 'LockExpired')) return {}
  const proof: SentProofRecord = {
    channelKey,
    balanceHash: balanceHash({ transferredAmount: m.transferred_amount, lockedAmount: m.locked_amount, locksroot: m.locksroot }),
    nonce: m.nonce,
    transferredAmount: m.transferred_amount,
    lockedAmount: m.locked_amount,
    locksroot: m.locksroot,
  }
  if (m.type === 'LockedTransfer' || m.type === 'RefundTransfer')
    return { proof, lock: { channelKey, secrethash: m.lock.secrethash, expiration: m.lock.expiration, amount: m.lock.amount, addedNonce: m.nonce } }
  const secrethash = m.type === 'Unlock' ? sha256(m.secret) : m.secrethash
  const lock = before.channels[channelKey]?.our.locks.find((l) => l.secrethash.toLowerCase() === secrethash.toLowerCase())
  if (!lock || lock.nonce === undefined) return { proof }
  return {
    proof,
    lock: { channelKey, secrethash: lock.secrethash, expiration: lock.expiration, amount: lock.amount, addedNonce: lock.nonce, removedNonce: m.nonce },
  }
}

/**
 * What a ChannelSync leaves in the stored history when it made us adopt a newer proof of ours than the restored copy
 * had (docs/decisions/0034): that proof, signed by us in a life the copy did not see, and its locks from its nonce,
 * so a close with it is known as ours and can be settled and unlocked (docs/decisions/0014).
 */
export function syncedHistory(change: StateChange, before: NodeState, after: NodeState): { proofs: SentProofRecord[]; locks: SentLockRecord[] } {
  if (change.type !== 'receive' || change.message.type !== 'ChannelSync') return { proofs: [], locks: [] }
  const m = change.message
  const key = channelKey(m.token_network_address, m.channel_identifier)
  const was = before.channels[key]?.our.balanceProof
  const now = after.channels[key]?.our
  if (!now?.balanceProof || now.balanceProof === was || (was && was.nonce >= now.balanceProof.nonce)) return { proofs: [], locks: [] }
  const p = now.balanceProof
  return {
    proofs: [
      {
        channelKey: key,
        balanceHash: p.balanceHash,
        nonce: p.nonce,
        transferredAmount: p.transferredAmount,
        lockedAmount: p.lockedAmount,
        locksroot: p.locksroot,
      },
    ],
    locks: now.locks
      .filter((l) => l.nonce === p.nonce)
      .map((l) => ({ channelKey: key, secrethash: l.secrethash, expiration: l.expiration, amount: l.amount, addedNonce: p.nonce })),
  }
}

/**
 * What a partner's message leaves in the stored history when the transition applied it (its end's nonce moved to the
 * message's): its signed bytes and signature, so a second message under that nonce can be compared (docs/decisions/0029).
 */
export function receivedHistory(change: StateChange, before: NodeState, after: NodeState): ReceivedRecord | undefined {
  if (change.type !== 'receive' || !takesNonce(change.message)) return undefined
  const m = change.message
  const key = channelKey(m.token_network_address, m.channel_identifier)
  const was = before.channels[key]
  const now = after.channels[key]
  if (!was || !now || !sameAddress(change.sender, now.partner)) return undefined
  if (was.partnerEnd.nonce >= m.nonce || now.partnerEnd.nonce !== m.nonce) return undefined
  return { channelKey: key, nonce: m.nonce, ...signedCopy(m) }
}
