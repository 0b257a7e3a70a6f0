import type { Address } from 'viem'
import type { Signed, WithdrawConfirmation, WithdrawExpired, WithdrawRequest } from '../messages/types.ts'
import { getChannel, putChannel, sameAddress, takeMessageId, type TransitionContext } from '../state/access.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, NodeState, PendingWithdraw } from '../state/types.ts'
import { sendProcessed } from '../transfer/send.ts'
import { balance, distributable, withdrawTotal } from './amounts.ts'
import { channelKey } from './key.ts'
import { WAITING_SYNC_REASON, waitsForSync } from './sync.ts'

function rejected(out: Effect[], sender: Address, messageType: string, reason: string): void {
  out.push({ type: 'event', event: { type: 'messageRejected', sender, messageType, reason } })
}

/** Sends a WithdrawRequest for `totalWithdraw`, taking our next nonce; the caller checked it is allowed. */
function requestWithdraw(
  state: NodeState,
  channel: Channel,
  totalWithdraw: bigint,
  expiration: bigint,
  coop: 'initiator' | 'partner' | undefined,
  out: Effect[],
): NodeState {
  const [id, s] = takeMessageId(state)
  const nonce = channel.our.nonce + 1n
  // Only the side that starts a cooperative settle flags its request, and only it sends the transaction.
  const coopSettle = coop === 'initiator'
  const pending: PendingWithdraw = { totalWithdraw, expiration, nonce, messageIdentifier: id, ...(coop ? { coopSettle: true, coopInitiator: coopSettle } : {}) }
  const next: Channel = { ...channel, our: { ...channel.our, nonce, pendingWithdraws: [...channel.our.pendingWithdraws, pending] } }
  out.push({
    type: 'send',
    recipient: channel.partner,
    channelKey: channelKey(channel.tokenNetwork, channel.id),
    message: {
      type: 'WithdrawRequest',
      message_identifier: id,
      chain_id: channel.chainId,
      token_network_address: channel.tokenNetwork,
      channel_identifier: channel.id,
      participant: channel.our.address,
      total_withdraw: totalWithdraw,
      nonce,
      expiration,
      coop_settle: coopSettle,
    },
  })
  return putChannel(s, next)
}

/** Why we may not ask to withdraw up to `totalWithdraw` now, or undefined. */
export function whyNotWithdraw(channel: Channel | undefined, totalWithdraw: bigint): string | undefined {
  if (!channel) return 'no such channel'
  if (channel.state !== 'opened') return `channel is ${channel.state}`
  if (waitsForSync(channel)) return WAITING_SYNC_REASON
  const current = withdrawTotal(channel.our)
  if (totalWithdraw <= current) return `total withdraw must exceed the current ${current}`
  const free = distributable(channel.our, channel.partnerEnd)
  if (totalWithdraw - current > free) return `insufficient balance: ${free} available to withdraw`
  return undefined
}

export function startWithdraw(state: NodeState, tokenNetwork: Address, channelId: bigint, totalWithdraw: bigint, out: Effect[]): NodeState {
  const channel = getChannel(state, tokenNetwork, channelId)
  const why = whyNotWithdraw(channel, totalWithdraw)
  if (why) return actionRejected(state, 'withdraw', why, out)
  return requestWithdraw(state, channel!, totalWithdraw, state.blockNumber + 2n * channel!.revealTimeout - 1n, undefined, out)
}

/** Why a cooperative settle cannot start now, or undefined. */
export function whyNotCoopSettle(channel: Channel | undefined): string | undefined {
  if (channel?.state !== 'opened') return 'channel is not open'
  if (waitsForSync(channel)) return WAITING_SYNC_REASON
  if (channel.our.locks.length || channel.partnerEnd.locks.length) return 'pending locks: cooperative settle needs a quiet channel'
  if (channel.our.pendingWithdraws.length || channel.partnerEnd.pendingWithdraws.length) return 'a withdraw is pending'
  return undefined
}

/** A user action the state does not allow: nothing changes, and the reason is reported. */
export function actionRejected(state: NodeState, action: string, reason: string, out: Effect[]): NodeState {
  out.push({ type: 'event', event: { type: 'actionRejected', action, reason } })
  return state
}

/** Cooperative settle: withdraw our whole balance together with the partner's in one transaction. */
export function startCoopSettle(state: NodeState, tokenNetwork: Address, channelId: bigint, out: Effect[]): NodeState {
  const channel = getChannel(state, tokenNetwork, channelId)
  const why = whyNotCoopSettle(channel)
  if (why) return actionRejected(state, 'coopSettle', why, out)
  if (!channel) return state
  const total = channel.our.withdrawn + balance(channel.our, channel.partnerEnd)
  return requestWithdraw(state, channel, total, state.blockNumber + 2n * channel.revealTimeout - 1n, 'initiator', out)
}

export function receiveWithdrawRequest(state: NodeState, message: Signed<WithdrawRequest>, sender: Address, out: Effect[]): NodeState {
  const channel = getChannel(state, message.token_network_address, message.channel_identifier)
  const fail = (reason: string) => {
    rejected(out, sender, message.type, reason)
    return state
  }
  if (!channel) return fail('unknown channel')
  if (!sameAddress(sender, channel.partner) || !sameAddress(message.participant, sender)) return fail('participant is not the sender and channel partner')
  if (message.chain_id !== channel.chainId) return fail('wrong chain id')
  if (channel.state !== 'opened') return fail(`channel is ${channel.state}`)
  // Its confirmation takes our nonce: the partner resends the request until it is answered, after the sync.
  if (waitsForSync(channel)) return fail(WAITING_SYNC_REASON)
  if (message.nonce !== channel.partnerEnd.nonce + 1n) return fail(`nonce ${message.nonce} is not ${channel.partnerEnd.nonce + 1n}`)
  const current = withdrawTotal(channel.partnerEnd)
  if (message.total_withdraw <= current) return fail(`total withdraw must exceed ${current}`)
  const free = distributable(channel.partnerEnd, channel.our)
  if (message.total_withdraw - current > free) return fail(`withdraw exceeds the partner's distributable ${free}`)
  const coop = message.coop_settle === true
  if (coop) {
    const whole = channel.partnerEnd.withdrawn + balance(channel.partnerEnd, channel.our)
    if (channel.our.locks.length || channel.partnerEnd.locks.length || channel.our.pendingWithdraws.length)
      return fail('cooperative settle needs a quiet channel')
    if (message.total_withdraw !== whole) return fail(`cooperative settle must withdraw the whole balance ${whole}`)
  }
  const pending: PendingWithdraw = {
    totalWithdraw: message.total_withdraw,
    expiration: message.expiration,
    nonce: message.nonce,
    messageIdentifier: message.message_identifier,
    requesterSignature: message.signature,
    ...(coop ? { coopSettle: true } : {}),
  }
  // An expired request is still confirmed: it used the partner's nonce, and its WithdrawExpired will follow.
  const nonce = channel.our.nonce + 1n
  let next: Channel = {
    ...channel,
    partnerEnd: { ...channel.partnerEnd, nonce: message.nonce, pendingWithdraws: [...channel.partnerEnd.pendingWithdraws, pending] },
    our: { ...channel.our, nonce },
  }
  out.push({
    type: 'send',
    recipient: channel.partner,
    channelKey: channelKey(channel.tokenNetwork, channel.id),
    message: {
      type: 'WithdrawConfirmation',
      message_identifier: message.message_identifier,
      chain_id: channel.chainId,
      token_network_address: channel.tokenNetwork,
      channel_identifier: channel.id,
      participant: channel.partner,
      total_withdraw: message.total_withdraw,
      nonce,
      expiration: message.expiration,
    },
  })
  let s = putChannel(state, next)
  if (coop) {
    const ours = next.our.withdrawn + balance(next.our, next.partnerEnd)
    s = requestWithdraw(s, next, ours, message.expiration, 'partner', out)
    next = getChannel(s, next.tokenNetwork, next.id)!
  }
  return maybeCoopSettle(s, next, out)
}

/** Sends cooperativeSettle once both withdraws of a coop settle are signed by both. */
function maybeCoopSettle(state: NodeState, channel: Channel, out: Effect[]): NodeState {
  const ours = channel.our.pendingWithdraws.find((w) => w.coopInitiator && w.confirmationSignature && !w.sent)
  const theirs = channel.partnerEnd.pendingWithdraws.find((w) => w.coopSettle || (ours && w.expiration === ours.expiration))
  if (!ours || !theirs?.requesterSignature) return state
  if (ours.totalWithdraw + theirs.totalWithdraw !== channel.our.deposit + channel.partnerEnd.deposit) return state
  if (state.blockNumber + channel.revealTimeout > ours.expiration) return state
  out.push({
    type: 'transaction',
    transaction: {
      type: 'cooperativeSettle',
      tokenNetwork: channel.tokenNetwork,
      channelId: channel.id,
      our: { totalWithdraw: ours.totalWithdraw, expiration: ours.expiration, partnerSignature: ours.confirmationSignature! },
      partner: { address: channel.partner, totalWithdraw: theirs.totalWithdraw, expiration: theirs.expiration, partnerSignature: theirs.requesterSignature },
      // The contract takes a withdraw only in a block before its expiration.
      deadline: (ours.expiration < theirs.expiration ? ours.expiration : theirs.expiration) - 1n,
    },
  })
  const marked = channel.our.pendingWithdraws.map((w) => (w === ours ? { ...w, sent: true } : w))
  return putChannel(state, { ...channel, state: 'settling', our: { ...channel.our, pendingWithdraws: marked } })
}

export function receiveWithdrawConfirmation(state: NodeState, message: Signed<WithdrawConfirmation>, sender: Address, out: Effect[]): NodeState {
  const channel = getChannel(state, message.token_network_address, message.channel_identifier)
  const fail = (reason: string) => {
    rejected(out, sender, message.type, reason)
    return state
  }
  if (!channel) return fail('unknown channel')
  if (!sameAddress(sender, channel.partner) || !sameAddress(message.participant, state.address))
    return fail('not a confirmation of our withdraw by the partner')
  if (message.chain_id !== channel.chainId) return fail('wrong chain id')
  const pending = channel.our.pendingWithdraws.find((w) => w.totalWithdraw === message.total_withdraw && w.expiration === message.expiration)
  if (!pending) {
    const expired = channel.our.expiredWithdraws?.some((w) => w.totalWithdraw === message.total_withdraw && w.expiration === message.expiration)
    if (!expired) return fail('no matching withdraw request')
    // A late confirmation of a withdraw we declared expired: keep nonces in step, do nothing else.
    if (message.nonce !== channel.partnerEnd.nonce + 1n) return fail(`nonce ${message.nonce} is not ${channel.partnerEnd.nonce + 1n}`)
    const next: Channel = { ...channel, partnerEnd: { ...channel.partnerEnd, nonce: message.nonce } }
    return sendProcessed(putChannel(state, next), sender, message.message_identifier, out)
  }
  if (pending.confirmationSignature) return sendProcessed(state, sender, message.message_identifier, out)
  if (message.nonce !== channel.partnerEnd.nonce + 1n) return fail(`nonce ${message.nonce} is not ${channel.partnerEnd.nonce + 1n}`)
  const confirmed: PendingWithdraw = { ...pending, confirmationSignature: message.signature }
  let next: Channel = {
    ...channel,
    partnerEnd: { ...channel.partnerEnd, nonce: message.nonce },
    our: { ...channel.our, pendingWithdraws: channel.our.pendingWithdraws.map((w) => (w === pending ? confirmed : w)) },
  }
  let s = sendProcessed(putChannel(state, next), sender, message.message_identifier, out)
  if (pending.coopSettle) return maybeCoopSettle(s, next, out)
  // Only send when the transaction can still be mined before the withdraw expires.
  if (channel.state === 'opened' && state.blockNumber + channel.revealTimeout <= pending.expiration) {
    out.push({
      type: 'transaction',
      transaction: {
        type: 'setTotalWithdraw',
        tokenNetwork: channel.tokenNetwork,
        channelId: channel.id,
        participant: state.address,
        totalWithdraw: pending.totalWithdraw,
        expiration: pending.expiration,
        partnerSignature: message.signature,
        deadline: pending.expiration - 1n,
      },
    })
    next = { ...next, our: { ...next.our, pendingWithdraws: next.our.pendingWithdraws.map((w) => (w === confirmed ? { ...w, sent: true } : w)) } }
    s = putChannel(s, next)
  }
  return s
}

export function receiveWithdrawExpired(state: NodeState, message: Signed<WithdrawExpired>, sender: Address, ctx: TransitionContext, out: Effect[]): NodeState {
  const channel = getChannel(state, message.token_network_address, message.channel_identifier)
  const fail = (reason: string) => {
    rejected(out, sender, message.type, reason)
    return state
  }
  if (!channel) return fail('unknown channel')
  if (!sameAddress(sender, channel.partner) || !sameAddress(message.participant, sender)) return fail('participant is not the sender and channel partner')
  if (message.nonce !== channel.partnerEnd.nonce + 1n) return fail(`nonce ${message.nonce} is not ${channel.partnerEnd.nonce + 1n}`)
  const pending = channel.partnerEnd.pendingWithdraws.find((w) => w.totalWithdraw === message.total_withdraw && w.expiration === message.expiration)
  if (!pending) return fail('no matching pending withdraw')
  if (state.blockNumber < message.expiration + ctx.confirmationBlocks) return fail('withdraw not expired yet')
  const next: Channel = {
    ...channel,
    partnerEnd: { ...channel.partnerEnd, nonce: message.nonce, pendingWithdraws: channel.partnerEnd.pendingWithdraws.filter((w) => w !== pending) },
  }
  return sendProcessed(putChannel(state, next), sender, message.message_identifier, out)
}

/** On each block: our withdraws that expired without reaching the chain are declared expired to the partner. */
export function withdrawOnBlock(state: NodeState, ctx: TransitionContext, out: Effect[]): NodeState {
  let s = state
  for (const channel of Object.values(state.channels)) {
    const expired = channel.our.pendingWithdraws.filter((w) => state.blockNumber >= w.expiration + 2n * ctx.confirmationBlocks)
    if (!expired.length || channel.state !== 'opened' || waitsForSync(channel)) continue
    let next = channel
    for (const w of expired) {
      const [id, s2] = takeMessageId(s)
      s = s2
      const nonce = next.our.nonce + 1n
      const expiredWithdraws = [...(next.our.expiredWithdraws ?? []), { totalWithdraw: w.totalWithdraw, expiration: w.expiration }].slice(-16)
      next = { ...next, our: { ...next.our, nonce, expiredWithdraws, pendingWithdraws: next.our.pendingWithdraws.filter((p) => p !== w) } }
      out.push({
        type: 'send',
        recipient: channel.partner,
        channelKey: channelKey(channel.tokenNetwork, channel.id),
        message: {
          type: 'WithdrawExpired',
          message_identifier: id,
          chain_id: channel.chainId,
          token_network_address: channel.tokenNetwork,
          channel_identifier: channel.id,
          participant: state.address,
          total_withdraw: w.totalWithdraw,
          nonce,
          expiration: w.expiration,
        },
      })
      out.push({ type: 'event', event: { type: 'withdrawExpired', tokenNetwork: channel.tokenNetwork, channelId: channel.id, totalWithdraw: w.totalWithdraw } })
    }
    s = putChannel(s, next)
  }
  return s
}
