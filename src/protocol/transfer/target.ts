import { sha256, type Hex } from 'viem'
import { channelKey } from '../channel/key.ts'
import type { LockedTransfer, RevealSecret, Signed } from '../messages/types.ts'
import { putChannel, sameAddress, takeMessageId, without } from '../state/access.ts'
import type { DecryptedSecret } from '../state/changes.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, NodeState, TargetTransfer } from '../state/types.ts'
import { sendUnordered } from './send.ts'

/**
 * Whether a secret decrypted from the transfer's metadata may stand for the initiator's RevealSecret: it must open
 * this lock, and promise no more than the lock carries for this payment (the light client's own checks).
 */
function secretFits(message: LockedTransfer, decrypted: DecryptedSecret | undefined): decrypted is DecryptedSecret {
  if (!decrypted) return false
  if (sha256(decrypted.secret) !== message.lock.secrethash.toLowerCase()) return false
  if (decrypted.amount > message.lock.amount) return false
  return decrypted.paymentId === undefined || decrypted.paymentId === message.payment_identifier
}

/**
 * A transfer to us arrived and was applied. While it is safe to wait, learn the secret: from the metadata if the
 * initiator put it there for us (then reveal to our payer at once), else by asking the initiator for it. `now` is the
 * block the lock's time left counts from (blockNow): never an older one than the chain's head as the shell saw it.
 */
export function startTarget(
  state: NodeState,
  channel: Channel,
  message: Signed<LockedTransfer>,
  out: Effect[],
  decrypted: DecryptedSecret | undefined,
  now: bigint,
): NodeState {
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
  if (message.lock.expiration - now <= channel.revealTimeout) return s
  if (secretFits(message, decrypted)) return learnSecret(s, task, decrypted.secret, out)
  const [id, s2] = takeMessageId(s)
  s = sendUnordered(
    s2,
    message.initiator,
    {
      type: 'SecretRequest',
      message_identifier: id,
      payment_identifier: message.payment_identifier,
      secrethash: message.lock.secrethash,
      amount: message.lock.amount,
      expiration: message.lock.expiration,
    },
    out,
  )
  return { ...s, targets: { ...s.targets, [task.secrethash]: { ...task, secretRequested: true } } }
}

/** Keeps the secret on the task and on the partner's lock, and reveals it backwards to our payer so it unlocks. */
function learnSecret(state: NodeState, task: TargetTransfer, secret: Hex, out: Effect[]): NodeState {
  const secrethash = task.secrethash
  const channel = state.channels[task.channelKey]
  let s: NodeState = { ...state, targets: { ...state.targets, [secrethash]: { ...task, secret, state: 'secret_revealed' } } }
  if (channel) {
    const locks = channel.partnerEnd.locks.map((l) => (l.secrethash === secrethash ? { ...l, secret } : l))
    s = putChannel(s, { ...channel, partnerEnd: { ...channel.partnerEnd, locks } })
  }
  const [id, s2] = takeMessageId(s)
  return sendUnordered(s2, task.payer, { type: 'RevealSecret', message_identifier: id, secret }, out)
}

/** The initiator revealed the secret: keep it, and reveal it backwards to our payer so it unlocks. */
export function targetLearnsSecret(state: NodeState, message: Signed<RevealSecret>, secrethash: Hex, out: Effect[]): NodeState {
  const task = state.targets[secrethash]
  if (!task || task.secret || task.state === 'expired') return state
  if (state.blockNumber >= task.lock.expiration) return state
  return learnSecret(state, task, message.secret, out)
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
      out.push({
        type: 'transaction',
        transaction: { type: 'registerSecret', secret: task.secret, secrethash: task.secrethash, deadline: task.lock.expiration - 1n },
      })
      s = { ...s, targets: { ...s.targets, [task.secrethash]: { ...task, state: 'registering' } } }
    }
  }
  return s
}

export function endTarget(state: NodeState, secrethash: Hex): NodeState {
  return state.targets[secrethash] ? { ...state, targets: without(state.targets, secrethash) as NodeState['targets'] } : state
}

export const isTargetOf = (state: NodeState, message: LockedTransfer) => sameAddress(message.target, state.address)
