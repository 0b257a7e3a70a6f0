import { bytesToHex, type Address } from 'viem'
import { balanceHash } from '../balanceProof.ts'
import { packMessage } from '../messages/pack.ts'
import type { EnvelopeMessage, Message, Signed, WithdrawConfirmation, WithdrawExpired, WithdrawRequest } from '../messages/types.ts'
import { putChannel, sameAddress } from '../state/access.ts'
import type { SignedCopy } from '../state/changes.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, NodeState, StaleState } from '../state/types.ts'
import { sendProcessed } from '../transfer/send.ts'

/** The messages that take the next nonce of their sender's end of a channel (docs/protocol.md §3: one sequence). */
export type NonceMessage = EnvelopeMessage | WithdrawRequest | WithdrawConfirmation | WithdrawExpired

const NONCE_TYPES: ReadonlySet<Message['type']> = new Set([
  'LockedTransfer',
  'RefundTransfer',
  'Unlock',
  'LockExpired',
  'WithdrawRequest',
  'WithdrawConfirmation',
  'WithdrawExpired',
])

export function takesNonce(message: Message): message is NonceMessage {
  return NONCE_TYPES.has(message.type)
}

const ENVELOPE_TYPES: ReadonlySet<Message['type']> = new Set(['LockedTransfer', 'RefundTransfer', 'Unlock', 'LockExpired'])

export function isBalanceProof(message: Message): message is EnvelopeMessage {
  return ENVELOPE_TYPES.has(message.type)
}

/** The message as evidence: the bytes its signature covers, and the signature. */
export function signedCopy(message: Signed<NonceMessage>): SignedCopy {
  return { type: message.type, signed: bytesToHex(packMessage(message)), signature: message.signature }
}

function rejected(out: Effect[], sender: Address, messageType: string, reason: string): void {
  out.push({ type: 'event', event: { type: 'messageRejected', sender, messageType, reason } })
}

/**
 * A message of the partner under a nonce its end already used (docs/decisions/0029). Compared with what we applied
 * under that nonce (`applied`, from the store): the same signed bytes are a resend, acknowledged again (a withdraw
 * request's answer is its confirmation, already on its way); other bytes are an equivocation, never acknowledged:
 * both signed copies go out as evidence and the partner's end counts it. Without the applied copy at hand (not kept,
 * or applied after the shell looked) nothing can be told, so nothing is acknowledged: a later resend is compared.
 */
export function receiveUnderUsedNonce(
  state: NodeState,
  channel: Channel,
  message: Signed<NonceMessage>,
  applied: SignedCopy | null | undefined,
  out: Effect[],
): NodeState {
  const partner = channel.partner
  if (!applied) {
    rejected(out, partner, message.type, `nonce ${message.nonce} is already used and what was applied under it is not at hand to compare: not acknowledged`)
    return state
  }
  const copy = signedCopy(message)
  if (copy.signed.toLowerCase() === applied.signed.toLowerCase()) {
    // Our acknowledgement was lost: acknowledge again, change nothing.
    return message.type === 'WithdrawRequest' ? state : sendProcessed(state, partner, message.message_identifier, out)
  }
  out.push({
    type: 'event',
    event: {
      type: 'partnerEquivocated',
      tokenNetwork: channel.tokenNetwork,
      channelId: channel.id,
      partner,
      nonce: message.nonce,
      applied: { type: applied.type, signed: applied.signed, signature: applied.signature },
      second: copy,
    },
  })
  const end = channel.partnerEnd
  return putChannel(state, { ...channel, partnerEnd: { ...end, equivocations: (end.equivocations ?? 0) + 1 } })
}

/**
 * A message signed with our own key for one of our channels: our nonce coming back. Above the last nonce this state
 * knows we used, or a balance proof whose balance hash we never signed (`ourProofKnown` false), it means the state is
 * older than what we sent: stale. Otherwise it is an echo of what we sent, ignored.
 */
export function receiveOwnMessage(state: NodeState, channel: Channel, message: Signed<NonceMessage>, ourProofKnown: boolean | undefined): NodeState {
  if (channel.forgotten) return skipPast(state, channel, message.nonce)
  const ourNonce = channel.our.nonce
  if (message.nonce > ourNonce)
    return markStale(state, {
      reason: `a ${message.type} signed with our key under nonce ${message.nonce} came back, beyond the last nonce this state knows we used (${ourNonce})`,
      tokenNetwork: channel.tokenNetwork,
      channelId: channel.id,
      nonce: message.nonce,
      ourNonce,
      source: 'message',
    })
  if (isBalanceProof(message) && ourProofKnown === false && !beforeHistory(channel, message.nonce)) {
    const hash = balanceHash({ transferredAmount: message.transferred_amount, lockedAmount: message.locked_amount, locksroot: message.locksroot })
    return markStale(state, {
      reason: `a ${message.type} signed with our key under nonce ${message.nonce} came back with a balance hash ${hash} this node never signed`,
      tokenNetwork: channel.tokenNetwork,
      channelId: channel.id,
      nonce: message.nonce,
      ourNonce,
      source: 'message',
    })
  }
  return state
}

/**
 * A proof of ours submitted on-chain (the partner closed with it, or updated after our close): stale when its
 * nonce is beyond the last we know we used, or its balance hash is one our store never signed.
 */
export function checkOurProofOnChain(
  state: NodeState,
  channel: Channel,
  { nonce, balanceHash: hash, ourProofKnown, event }: { nonce: bigint; balanceHash: string; ourProofKnown?: boolean | undefined; event: string },
): NodeState {
  if (channel.forgotten) return skipPast(state, channel, nonce)
  const ourNonce = channel.our.nonce
  const base = { tokenNetwork: channel.tokenNetwork, channelId: channel.id, nonce, ourNonce, source: 'chain' as const }
  if (nonce > ourNonce)
    return markStale(state, {
      ...base,
      reason: `${event} carries a proof of ours with nonce ${nonce}, beyond the last nonce this state knows we used (${ourNonce})`,
    })
  if (nonce > 0n && ourProofKnown === false && !beforeHistory(channel, nonce))
    return markStale(state, { ...base, reason: `${event} carries a proof of ours under nonce ${nonce} with a balance hash ${hash} this node never signed` })
  return state
}

/**
 * A nonce of ours seen on a forgotten channel (`Channel.forgotten`): used in the life the store forgot, so ours goes
 * past it (skipping nonces costs nothing) and it proves nothing stale.
 */
function skipPast(state: NodeState, channel: Channel, nonce: bigint): NodeState {
  return nonce > channel.our.nonce ? putChannel(state, { ...channel, our: { ...channel.our, nonce } }) : state
}

/** A nonce of ours older than the history a restored copy kept (docs/decisions/0034): the store cannot tell. */
function beforeHistory(channel: Channel, nonce: bigint): boolean {
  return channel.ourHistoryFrom !== undefined && nonce < channel.ourHistoryFrom
}

/** Marks the state stale (the first reason stays). The transition turns this into the staleState event and no other effect. */
function markStale(state: NodeState, stale: StaleState): NodeState {
  return state.stale ? state : { ...state, stale }
}

/** Whether `sender` is `channel`'s partner or ourselves: who may have signed a nonce of this channel. */
export function nonceSigner(state: NodeState, channel: Channel, sender: Address): 'partner' | 'us' | undefined {
  if (sameAddress(sender, channel.partner)) return 'partner'
  if (sameAddress(sender, state.address)) return 'us'
  return undefined
}
