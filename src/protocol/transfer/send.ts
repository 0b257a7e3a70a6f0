import type { Address, Hex } from 'viem'
import { transferred } from '../channel/amounts.ts'
import { channelKey } from '../channel/key.ts'
import { nextOwnProof } from '../channel/outgoing.ts'
import type { Lock } from '../locks.ts'
import type { Message, Metadata } from '../messages/types.ts'
import { putChannel, takeMessageId } from '../state/access.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, NodeState } from '../state/types.ts'

export type Sent = { state: NodeState; channel: Channel; messageIdentifier: bigint }

const sameHash = (a: Hex, b: Hex) => a.toLowerCase() === b.toLowerCase()

/** Sends a message outside any channel's ordered queue (secret messages, Processed). */
export function sendUnordered(state: NodeState, recipient: Address, message: Message, out: Effect[]): NodeState {
  out.push({ type: 'send', recipient, message })
  return state
}

/** Acknowledges a message that was validated and applied. */
export function sendProcessed(state: NodeState, recipient: Address, messageIdentifier: bigint, out: Effect[]): NodeState {
  return sendUnordered(state, recipient, { type: 'Processed', message_identifier: messageIdentifier }, out)
}

/** Locks `lock.amount` towards the channel partner: a LockedTransfer (or a RefundTransfer back to a payer). */
export function sendLockedTransfer(
  state: NodeState,
  channel: Channel,
  type: 'LockedTransfer' | 'RefundTransfer',
  fields: { paymentId: bigint; token: Address; lock: Lock; target: Address; initiator: Address; metadata: Metadata },
  out: Effect[],
): Sent {
  const [id, s] = takeMessageId(state)
  const added = { ...fields.lock, nonce: channel.our.nonce + 1n }
  const { channel: next, message } = nextOwnProof(channel, id, [...channel.our.locks, added], transferred(channel.our), (env) => ({
    type,
    ...env,
    payment_identifier: fields.paymentId,
    token: fields.token,
    recipient: channel.partner,
    lock: fields.lock,
    target: fields.target,
    initiator: fields.initiator,
    metadata: fields.metadata,
  }))
  out.push({ type: 'send', recipient: channel.partner, message, channelKey: channelKey(channel.tokenNetwork, channel.id) })
  return { state: putChannel(s, next), channel: next, messageIdentifier: id }
}

/** Pays out our lock of `secrethash`: the amount moves from locked to transferred. */
export function sendUnlock(state: NodeState, channel: Channel, secrethash: Hex, secret: Hex, paymentId: bigint, out: Effect[]): Sent | undefined {
  const lock = channel.our.locks.find((l) => sameHash(l.secrethash, secrethash))
  if (!lock) return undefined
  const [id, s] = takeMessageId(state)
  const locks = channel.our.locks.filter((l) => l !== lock)
  const { channel: next, message } = nextOwnProof(channel, id, locks, transferred(channel.our) + lock.amount, (env) => ({
    type: 'Unlock' as const,
    ...env,
    payment_identifier: paymentId,
    secret,
  }))
  out.push({ type: 'send', recipient: channel.partner, message, channelKey: channelKey(channel.tokenNetwork, channel.id) })
  return { state: putChannel(s, next), channel: next, messageIdentifier: id }
}

/** Takes back our expired lock of `secrethash`. */
export function sendLockExpired(state: NodeState, channel: Channel, secrethash: Hex, out: Effect[]): Sent | undefined {
  const lock = channel.our.locks.find((l) => sameHash(l.secrethash, secrethash))
  if (!lock) return undefined
  const [id, s] = takeMessageId(state)
  const locks = channel.our.locks.filter((l) => l !== lock)
  const { channel: next, message } = nextOwnProof(channel, id, locks, transferred(channel.our), (env) => ({
    type: 'LockExpired' as const,
    ...env,
    recipient: channel.partner,
    secrethash: lock.secrethash,
  }))
  out.push({ type: 'send', recipient: channel.partner, message, channelKey: channelKey(channel.tokenNetwork, channel.id) })
  return { state: putChannel(s, next), channel: next, messageIdentifier: id }
}
