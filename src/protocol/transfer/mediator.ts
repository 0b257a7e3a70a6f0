import type { Address, Hex } from 'viem'
import { channelKey } from '../channel/key.ts'
import { distributable } from '../channel/amounts.ts'
import { amountWithoutFees } from '../fees/mediationFee.ts'
import type { Lock } from '../locks.ts'
import type { LockedTransfer, RefundTransfer, RevealSecret, Signed } from '../messages/types.ts'
import { blockNow, channelWith, sameAddress, takeMessageId, without, type TransitionContext } from '../state/access.ts'
import type { ChainSeen } from '../state/changes.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, MediatedTransfer, NodeState } from '../state/types.ts'
import { mediationChannels } from './feeViews.ts'
import { sendLockExpired, sendLockedTransfer, sendUnlock, sendUnordered } from './send.ts'
import { whyNotUsable } from './usable.ts'
import { waitsForSync } from '../channel/sync.ts'

const put = (state: NodeState, task: MediatedTransfer): NodeState => ({ ...state, mediators: { ...state.mediators, [task.secrethash]: task } })

/** The hop after us on the transfer's route, from the metadata the initiator signed. */
export function nextHop(message: LockedTransfer, us: Address): Address | undefined {
  for (const { route } of message.metadata.routes) {
    const i = route.findIndex((a) => sameAddress(a, us))
    if (i >= 0 && i + 1 < route.length) return route[i + 1]
  }
  return undefined
}

/**
 * Why we cannot give `lock` back to our payer over `channel` with a RefundTransfer, or undefined when we can. A
 * refund is a lock of ours of the same amount and expiration towards the payer, so it needs our balance there and
 * must stay within the channel's settle timeout (the payer checks both, docs/protocol.md §4.3). It needs no reveal
 * timeout: the payer's lock to us and our refund share the secret hash and the expiration, so whoever registers the
 * secret in time makes both claimable, and we never have to register it ourselves.
 */
function whyNoRefund(channel: Channel | undefined, lock: Lock, ctx: TransitionContext, now: bigint): string | undefined {
  if (channel?.state !== 'opened') return `the channel with the payer is ${channel?.state ?? 'gone'}`
  const blocksLeft = lock.expiration - now
  if (blocksLeft <= 0n) return 'the lock has expired'
  if (blocksLeft > channel.settleTimeout) return `the lock outlasts the settle timeout ${channel.settleTimeout}`
  if (channel.our.locks.length >= ctx.maxPendingLocks) return `too many pending locks (${ctx.maxPendingLocks})`
  const free = distributable(channel.our, channel.partnerEnd)
  if (lock.amount > free) return `our balance towards the payer is ${free}, the lock is ${lock.amount}`
  return undefined
}

/** Gives the payer's lock back at once with a RefundTransfer, when we can (whyNoRefund); else it waits for expiry. */
function refundPayer(state: NodeState, task: MediatedTransfer, token: Address, ctx: TransitionContext, out: Effect[], now: bigint): NodeState {
  const payerChannel = state.channels[task.payerChannelKey]
  if (whyNoRefund(payerChannel, task.payerLock, ctx, now)) return put(state, task)
  const sent = sendLockedTransfer(
    state,
    payerChannel!,
    'RefundTransfer',
    { paymentId: task.paymentId, token, lock: task.payerLock, target: task.target, initiator: task.initiator, metadata: task.metadata },
    out,
  )
  return put(sent.state, { ...task, refunded: true })
}

/**
 * A transfer to forward arrived and was applied in the payer channel: lock the amount less our fee with the same
 * expiration towards the next hop. The fee is Raiden's, from our schedules for the two channels (docs/decisions/0069):
 * what goes out is what Raiden's get_amount_without_fees gives for what came in. When the next hop cannot take it (no
 * next hop on the route, no open channel to it, nothing left after the fees or a balance the fee cannot be worked out
 * for, too little balance, too many locks, or a lock that ends within the channel's reveal timeout or outlasts its
 * settle timeout), give the lock back to the payer at once so the initiator can try another route.
 * Only when even that is impossible (we lack the balance towards the payer) does the lock wait for its expiry.
 *
 * The lock's time left counts from `seen`'s head when our synced block is older (blockNow). While the chain is out
 * of reach (`seen.chainUnreachable`) nothing is forwarded: once our lock to the payee is out, what protects our money
 * against a payer who does not unlock is registering the secret on-chain within the reveal timeout, which we could
 * not do; the refund needs no chain (docs/decisions/0056).
 */
export function startMediator(
  state: NodeState,
  payerChannel: Channel,
  message: Signed<LockedTransfer>,
  ctx: TransitionContext,
  out: Effect[],
  seen: ChainSeen = {},
): NodeState {
  const lock = message.lock
  const task: MediatedTransfer = {
    secrethash: lock.secrethash,
    tokenNetwork: payerChannel.tokenNetwork,
    paymentId: message.payment_identifier,
    initiator: message.initiator,
    target: message.target,
    payerChannelKey: channelKey(payerChannel.tokenNetwork, payerChannel.id),
    payer: payerChannel.partner,
    payerLock: lock,
    payerState: 'pending',
    metadata: message.metadata,
  }
  const hop = nextHop(message, state.address)
  const payeeChannel = hop && !sameAddress(hop, payerChannel.partner) ? channelWith(state, payerChannel.tokenNetwork, hop) : undefined
  const amountOut = payeeChannel?.state === 'opened' ? amountWithoutFees(lock.amount, mediationChannels(state, payerChannel, payeeChannel)) : undefined
  const now = blockNow(state, seen.headBlock)
  const why = seen.chainUnreachable
    ? 'the chain is out of reach'
    : !hop
      ? 'no next hop on the route'
      : (whyNotUsable(payeeChannel, amountOut ?? lock.amount, lock.expiration - now, ctx) ??
        (amountOut === undefined ? 'no amount is left to forward after the fees' : undefined))
  if (why || amountOut === undefined) return refundPayer(state, task, message.token, ctx, out, now)
  const payeeLock = { amount: amountOut, expiration: lock.expiration, secrethash: lock.secrethash }
  const sent = sendLockedTransfer(
    state,
    payeeChannel!,
    'LockedTransfer',
    {
      paymentId: message.payment_identifier,
      token: message.token,
      lock: payeeLock,
      target: message.target,
      initiator: message.initiator,
      metadata: message.metadata,
    },
    out,
  )
  return put(sent.state, { ...task, payeeChannelKey: channelKey(payeeChannel!.tokenNetwork, payeeChannel!.id), payee: hop!, payeeLock, payeeState: 'pending' })
}

/**
 * Our payee gave our lock back (it could not forward it): we cannot either, as the route came from the initiator,
 * so the refund travels on back to our payer at once. Our lock to the payee is never paid now (we unlock only a
 * payee in 'pending' or 'secret_revealed') and is taken back at expiry, as the payee's refund to us is.
 */
export function mediatorOnRefund(
  state: NodeState,
  message: Signed<RefundTransfer>,
  sender: Address,
  ctx: TransitionContext,
  out: Effect[],
  headBlock?: bigint,
): NodeState {
  const task = state.mediators[message.lock.secrethash]
  if (!task?.payee || !task.payeeLock || task.payeeState !== 'pending' || task.refunded || !sameAddress(sender, task.payee)) return state
  const matches =
    message.payment_identifier === task.paymentId &&
    message.lock.amount === task.payeeLock.amount &&
    message.lock.expiration === task.payeeLock.expiration &&
    sameAddress(message.target, task.target)
  if (!matches) return state
  return refundPayer(state, { ...task, payeeState: 'refunded' }, message.token, ctx, out, blockNow(state, headBlock))
}

/**
 * Whether we could still claim the payer's lock off-chain, or have it claimable on-chain already. `now` is the block
 * its time left counts from: the chain's head as the shell saw it when a RevealSecret came, else the synced block.
 */
function payerLockSafe(state: NodeState, task: MediatedTransfer, now = state.blockNumber): boolean {
  const registered = state.registeredSecrets[task.secrethash]
  if (registered !== undefined && registered < task.payerLock.expiration) return true
  const payerChannel = state.channels[task.payerChannelKey]
  return !!payerChannel && payerChannel.state === 'opened' && task.payerLock.expiration - now > payerChannel.revealTimeout
}

function unlockPayee(state: NodeState, task: MediatedTransfer, out: Effect[]): NodeState {
  if (!task.secret || (task.payeeState !== 'pending' && task.payeeState !== 'secret_revealed')) return state
  const channel = task.payeeChannelKey ? state.channels[task.payeeChannelKey] : undefined
  // A payee channel waiting for its sync takes no Unlock of ours (its nonce): the payee can claim the lock on-chain.
  if (channel?.state !== 'opened' || waitsForSync(channel) || state.blockNumber >= task.payeeLock!.expiration) return state
  const sent = sendUnlock(state, channel, task.secrethash, task.secret, task.paymentId, out)
  return sent ? finishIfDone(put(sent.state, { ...task, payeeState: 'unlocked' }), task.secrethash, out) : state
}

/** Drops the task once both sides are resolved. */
function finishIfDone(state: NodeState, secrethash: Hex, out: Effect[]): NodeState {
  const task = state.mediators[secrethash]
  if (!task) return state
  const payerDone = task.payerState === 'unlocked' || task.payerState === 'expired'
  const payeeDone = (task.payeeState === undefined || task.payeeState === 'unlocked' || task.payeeState === 'expired') && !task.refunded
  if (!payerDone || !payeeDone) return state
  if (task.payerState === 'unlocked' && task.payeeState === 'unlocked')
    out.push({
      type: 'event',
      event: {
        type: 'mediationSucceeded',
        token: state.tokenNetworks[task.tokenNetwork]?.token ?? task.tokenNetwork,
        tokenNetwork: task.tokenNetwork,
        secrethash,
        paymentId: task.paymentId,
        initiator: task.initiator,
        target: task.target,
        amount: task.payerLock.amount,
        // What we kept: the payer paid us its lock, we paid the payee ours.
        fee: task.payerLock.amount - task.payeeLock!.amount,
      },
    })
  return { ...state, mediators: without(state.mediators, secrethash) as NodeState['mediators'] }
}

/** Learnt the secret (from the payee, or on-chain): reveal it to the payer and pay the payee when it is safe. */
function learnSecret(state: NodeState, task: MediatedTransfer, secret: Hex, out: Effect[], now = state.blockNumber): NodeState {
  let s = state
  let t = task
  if (!t.secret) {
    t = { ...t, secret, ...(t.payeeState === 'pending' ? { payeeState: 'secret_revealed' as const } : {}) }
    s = put(s, t)
    if (t.payerState === 'pending') {
      const [id, s2] = takeMessageId(s)
      s = sendUnordered(s2, t.payer, { type: 'RevealSecret', message_identifier: id, secret }, out)
      t = { ...t, payerState: 'secret_revealed' }
      s = put(s, t)
    }
  }
  if (payerLockSafe(s, t, now)) return unlockPayee(s, t, out)
  if (t.payerState !== 'waiting_registration' && t.payerState !== 'unlocked' && t.payerState !== 'expired' && s.blockNumber < t.payerLock.expiration) {
    // A lock is claimable on-chain when its secret was registered in a block before its expiration.
    out.push({ type: 'transaction', transaction: { type: 'registerSecret', secret, secrethash: t.secrethash, deadline: t.payerLock.expiration - 1n } })
    s = put(s, { ...t, payerState: 'waiting_registration' })
  }
  return s
}

/** The payee revealed the secret: it was paid downstream. We pay it only while the payer's lock is safe, from the head. */
export function mediatorOnRevealSecret(
  state: NodeState,
  message: Signed<RevealSecret>,
  secrethash: Hex,
  sender: Address,
  out: Effect[],
  headBlock?: bigint,
): NodeState {
  const task = state.mediators[secrethash]
  if (!task?.payee || !sameAddress(sender, task.payee)) return state
  return learnSecret(state, task, message.secret, out, blockNow(state, headBlock))
}

export function mediatorOnSecretRegistered(state: NodeState, secrethash: Hex, secret: Hex, out: Effect[]): NodeState {
  const task = state.mediators[secrethash]
  return task ? learnSecret(state, task, secret, out) : state
}

/** The payer unlocked (Unlock) or took back (LockExpired) its lock to us; the same from the payee is of its refund. */
export function mediatorOnPayerResolved(state: NodeState, secrethash: Hex, key: string, how: 'unlocked' | 'expired', out: Effect[]): NodeState {
  const task = state.mediators[secrethash]
  if (!task || task.payerChannelKey !== key) return state
  return finishIfDone(put(state, { ...task, payerState: how }), secrethash, out)
}

/** On each block: register a known secret before the payer's lock enters the danger zone; expire unpaid payee locks. */
export function mediatorOnBlock(state: NodeState, ctx: TransitionContext, out: Effect[]): NodeState {
  let s = state
  for (const task of Object.values(state.mediators)) {
    let t = task
    if (t.secret && !payerLockSafe(s, t)) s = learnSecret(s, t, t.secret, out)
    t = s.mediators[task.secrethash] ?? t
    const expiredAt = t.payerLock.expiration + 2n * ctx.confirmationBlocks
    // A LockExpired of ours on a channel that waits for its sync goes at the first block after it.
    const waits = (key: string | undefined) => key !== undefined && waitsForSync(s.channels[key])
    if (s.blockNumber >= expiredAt && !waits(t.payeeChannelKey) && !(t.refunded && waits(t.payerChannelKey))) {
      const registered = s.registeredSecrets[t.secrethash]
      const claimable = registered !== undefined && registered < t.payerLock.expiration
      // Our own lock towards the payee (one it gave back too) expired unpaid: take it back.
      if (!claimable && t.payeeChannelKey && (t.payeeState === 'pending' || t.payeeState === 'secret_revealed' || t.payeeState === 'refunded')) {
        const channel = s.channels[t.payeeChannelKey]
        if (channel?.state === 'opened') s = sendLockExpired(s, channel, t.secrethash, out)?.state ?? s
        t = { ...t, payeeState: 'expired' }
        s = put(s, t)
      }
      // Our refund to the payer expired too: take it back (a claimable one stays, for the chain to settle).
      if (t.refunded) {
        const channel = s.channels[t.payerChannelKey]
        if (!claimable && channel?.state === 'opened') s = sendLockExpired(s, channel, t.secrethash, out)?.state ?? s
        t = { ...t, refunded: false }
        s = put(s, t)
      }
      s = finishIfDone(s, t.secrethash, out)
    }
  }
  return s
}

/** When the payer's channel closes with the secret known, register it at once: the payer can no longer unlock. */
export function mediatorOnChannelClosed(state: NodeState, key: string, out: Effect[]): NodeState {
  let s = state
  for (const task of Object.values(state.mediators)) {
    if (task.payerChannelKey === key && task.secret) s = learnSecret(s, task, task.secret, out)
  }
  return s
}
