import type { Hex } from 'viem'
import { channelKey } from '../channel/key.ts'
import type { LockedTransfer, RevealSecret, Signed } from '../messages/types.ts'
import { putChannel, sameAddress, takeMessageId, without } from '../state/access.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, NodeState, TargetTransfer } from '../state/types.ts'
import { sendUnordered } from './send.ts'

/** A transfer to us arrived and was applied: ask the initiator for the secret while it is safe to wait. */
export function startTarget(state: NodeState, channel: Channel, message: Signed<LockedTransfer>, out: Effect[]): NodeState {
  const task: TargetTransfer = {
    secrethash: message.lock.secrethash,
    tokenNetwork: channel.tokenNetwork,
    channelKey: channelKey(channel.tokenNetwork, channel.id),
    initiator: message.initiator,
    payer: channel.partner,
    paymentId: message.payment_identifier,
    lock: message.lock,
    state: 'secret_request',
  }
  let s: NodeState = { ...state, targets: { ...state.targets, [task.secrethash]: task } }
  // In the danger zone the secret could not be revealed off-chain in time: let the lock expire instead.
  if (message.lock.expiration - s.blockNumber > channel.revealTimeout) {
    const [id, s2] = takeMessageId(s)
    s = sendUnordered(
      s2,
      message.initiator,
      { type: 'SecretRequest', message_identifier: id, payment_identifier: message.payment_identifier, secrethash: message.lock.secrethash, amount: message.lock.amount, expiration: message.lock.expiration },
      out,
    )
    s = { ...s, targets: { ...s.targets, [task.secrethash]: { ...task, secretRequested: true } } }
  }
  return s
}

/** The initiator revealed the secret: keep it, and reveal it backwards to our payer so it unlocks. */
export function targetLearnsSecret(state: NodeState, message: Signed<RevealSecret>, secrethash: Hex, out: Effect[]): NodeState {
  const task = state.targets[secrethash]
  if (!task || task.secret || task.state === 'expired') return state
  if (state.blockNumber >= task.lock.expiration) return state
  const channel = state.channels[task.channelKey]
  let s: NodeState = { ...state, targets: { ...state.targets, [secrethash]: { ...task, secret: message.secret, state: 'secret_revealed' } } }
  if (channel) {
    const locks = channel.partnerEnd.locks.map((l) => (l.secrethash === secrethash ? { ...l, secret: message.secret } : l))
    s = putChannel(s, { ...channel, partnerEnd: { ...channel.partnerEnd, locks } })
  }
  const [id, s2] = takeMessageId(s)
  return sendUnordered(s2, task.payer, { type: 'RevealSecret', message_identifier: id, secret: message.secret }, out)
}

/** On each block: register the secret on-chain when waiting longer for the Unlock would risk the payment. */
export function targetOnBlock(state: NodeState, out: Effect[]): NodeState {
  let s = state
  for (const task of Object.values(state.targets)) {
    if (!task.secret || task.state !== 'secret_revealed') continue
    const channel = state.channels[task.channelKey]
    if (!channel) continue
    const registered = state.registeredSecrets[task.secrethash]
    if (registered !== undefined) continue
    if (task.lock.expiration - state.blockNumber <= channel.revealTimeout && state.blockNumber < task.lock.expiration) {
      out.push({ type: 'transaction', transaction: { type: 'registerSecret', secret: task.secret, secrethash: task.secrethash } })
      s = { ...s, targets: { ...s.targets, [task.secrethash]: { ...task, state: 'registering' } } }
    }
  }
  return s
}

export function endTarget(state: NodeState, secrethash: Hex): NodeState {
  return state.targets[secrethash] ? { ...state, targets: without(state.targets, secrethash) as NodeState['targets'] } : state
}

export const isTargetOf = (state: NodeState, message: LockedTransfer) => sameAddress(message.target, state.address)
