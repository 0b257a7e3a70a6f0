import { sha256 } from 'viem'
import {
  closeChannel,
  onChannelClosed,
  onChannelDeposit,
  onChannelOpened,
  onChannelSettled,
  onChannelUnlocked,
  onChannelWithdraw,
  onNonClosingUpdated,
  onSecretRegistered,
  onTransactionFailed,
  settleOnBlock,
  unlockOnBlock,
} from './channel/onchain.ts'
import { getChannel, putChannel, rememberPublicKey, type TransitionContext } from './state/access.ts'
import { channelKey } from './channel/key.ts'
import {
  receiveWithdrawConfirmation,
  receiveWithdrawExpired,
  receiveWithdrawRequest,
  startCoopSettle,
  startWithdraw,
  withdrawOnBlock,
  actionRejected,
} from './channel/withdraw.ts'
import {
  answerChannelSync,
  forgottenChannel,
  markRestored,
  nonceSignedWhileWaiting,
  receiveChannelSync,
  requestChannelSyncs,
  WAITING_SYNC_REASON,
} from './channel/sync.ts'
import { nonceSigner, receiveOwnMessage, receiveUnderUsedNonce, takesNonce } from './channel/usedNonce.ts'
import { announcementsOf } from './routing/announcements.ts'
import { graphOnAmounts, graphOnClosed, graphOnOpened, graphOnSettled } from './routing/graph.ts'
import type { ChainSeen, DecryptedSecret, StateChange } from './state/changes.ts'
import type { Effect } from './state/effects.ts'
import type { NodeState } from './state/types.ts'
import {
  initPayment,
  initiatorOnBlock,
  initiatorOnRevealSecret,
  initiatorKeepsRegisteredSecret,
  initiatorOnSecretRegistered,
  initiatorOnSecretRequest,
  initiatorOnSecretResolved,
} from './transfer/initiator.ts'
import { mediatorOnBlock, mediatorOnChannelClosed, mediatorOnRevealSecret, mediatorOnSecretRegistered } from './transfer/mediator.ts'
import { receiveLockExpired, receiveLockedTransfer, receiveUnlock } from './transfer/receive.ts'
import { targetLearnsSecret, targetOnBlock } from './transfer/target.ts'
import type { Message, Signed } from './messages/types.ts'
import type { Address } from 'viem'

export type TransitionResult = { state: NodeState; effects: Effect[] }

/**
 * What a chain event that would sign under a waiting channel's nonce still changes: a secret registered on-chain is
 * recorded, and the initiator keeps it, so the payment succeeds after the sync rather than expire (the target can
 * claim it on-chain whatever we sign).
 */
function chainFactWhileWaiting(state: NodeState, change: StateChange): NodeState {
  if (change.type !== 'secretRegistered' || sha256(change.secret) !== change.secrethash.toLowerCase()) return state
  return initiatorKeepsRegisteredSecret(onSecretRegistered(state, change), change.secrethash, change.secret)
}

/**
 * The protocol: the node's next state and what must happen because of `change`. Pure: no I/O, no clock, no
 * randomness; the same inputs always give the same outputs, so replaying the write-ahead log rebuilds the state.
 */
export function transition(state: NodeState, change: StateChange, ctx: TransitionContext): TransitionResult {
  // A stale state (our own nonce came back with content we never signed) signs nothing and changes no more.
  if (state.stale) return { state, effects: [] }
  const out: Effect[] = []
  const next = apply(state, change, ctx, out)
  // A restored channel signs nothing under its nonce before its partner's sync: a change that would is refused whole.
  const waiting = nonceSignedWhileWaiting(state, out)
  if (waiting)
    return {
      // A chain fact is never refused: what it would sign waits, the fact is kept.
      state: chainFactWhileWaiting(state, change),
      effects: [{ type: 'event', event: { type: 'actionRejected', action: change.type, reason: `${WAITING_SYNC_REASON} (channel ${waiting.id})` } }],
    }
  if (next.stale) {
    // Nothing this change asked for leaves the node, but the news: what it would sign may reuse a nonce.
    const staleState: Effect = { type: 'event', event: { type: 'staleState', ...next.stale } }
    return { state: next, effects: [...out.filter((e) => e.type === 'event'), staleState] }
  }
  // What our channels can carry, or what we charge, changed: the pathfinding service is told (docs/decisions/0073).
  return { state: next, effects: [...out, ...announcementsOf(state, next)] }
}

function apply(state: NodeState, change: StateChange, ctx: TransitionContext, out: Effect[]): NodeState {
  switch (change.type) {
    case 'block': {
      if (change.blockNumber <= state.blockNumber) return state
      let s: NodeState = { ...state, blockNumber: change.blockNumber }
      s = initiatorOnBlock(s, ctx, out)
      s = mediatorOnBlock(s, ctx, out)
      s = targetOnBlock(s, out)
      s = withdrawOnBlock(s, ctx, out)
      s = settleOnBlock(s, out)
      return unlockOnBlock(s, out)
    }
    case 'tokenNetworkCreated':
      return state.tokenNetworks[change.tokenNetwork]
        ? state
        : { ...state, tokenNetworks: { ...state.tokenNetworks, [change.tokenNetwork]: { token: change.token, graph: {} } } }
    case 'channelOpened':
      return forgottenChannel(onChannelOpened(graphOnOpened(state, change), change, out), channelKey(change.tokenNetwork, change.channelId), change.blockNumber)
    case 'channelDeposit':
      return onChannelDeposit(graphOnAmounts(state, change.tokenNetwork, change.channelId, change.participant, { deposit: change.totalDeposit }), change, out)
    case 'channelWithdraw':
      return onChannelWithdraw(
        graphOnAmounts(state, change.tokenNetwork, change.channelId, change.participant, { withdrawn: change.totalWithdraw }),
        change,
        out,
      )
    case 'channelClosed': {
      const s = onChannelClosed(graphOnClosed(state, change.tokenNetwork, change.channelId), change, out)
      return mediatorOnChannelClosed(s, channelKey(change.tokenNetwork, change.channelId), out)
    }
    case 'nonClosingUpdated':
      return onNonClosingUpdated(state, change)
    case 'channelSettled':
      return onChannelSettled(graphOnSettled(state, change.tokenNetwork, change.channelId), change, out)
    case 'channelUnlocked':
      return onChannelUnlocked(state, change)
    case 'secretRegistered': {
      if (sha256(change.secret) !== change.secrethash.toLowerCase()) return state
      let s = onSecretRegistered(state, change)
      s = initiatorOnSecretRegistered(s, change.secrethash, change.secret, change.blockNumber, out)
      return mediatorOnSecretRegistered(s, change.secrethash, change.secret, out)
    }
    case 'initPayment':
      return initPayment(state, change, ctx, out)
    case 'secretResolved':
      return initiatorOnSecretResolved(state, change.secrethash, change.secret, out)
    case 'closeChannel':
      return closeChannel(state, change.tokenNetwork, change.channelId, out)
    case 'withdraw':
      return startWithdraw(state, change.tokenNetwork, change.channelId, change.totalWithdraw, out)
    case 'coopSettle':
      return startCoopSettle(state, change.tokenNetwork, change.channelId, out)
    case 'setRevealTimeout': {
      const channel = getChannel(state, change.tokenNetwork, change.channelId)
      if (!channel) return actionRejected(state, 'setRevealTimeout', 'no such channel', out)
      if (change.revealTimeout <= 0n || 2n * change.revealTimeout > channel.settleTimeout)
        return actionRejected(state, 'setRevealTimeout', 'the reveal timeout must be positive and at most half the settle timeout', out)
      return putChannel(state, { ...channel, revealTimeout: change.revealTimeout })
    }
    case 'transactionFailed':
      return onTransactionFailed(state, change, out)
    case 'restored':
      return markRestored(state, change.ourHistoryFrom, change.openedUpTo)
    case 'requestChannelSyncs':
      return requestChannelSyncs(state, out)
    case 'setMediationFees':
      return { ...state, mediationFees: change.fees }
    case 'receive': {
      const known = change.senderKey ? rememberPublicKey(state, change.sender, change.senderKey) : state
      const m = change.message
      if (takesNonce(m)) {
        // A nonce of ours coming back, or one the partner already used: compared, never applied again (docs/decisions/0029).
        const channel = getChannel(known, m.token_network_address, m.channel_identifier)
        const signer = channel && nonceSigner(known, channel, change.sender)
        if (signer === 'us') return receiveOwnMessage(known, channel!, m, change.ourProofKnown)
        if (signer === 'partner' && m.nonce > 0n && m.nonce <= channel!.partnerEnd.nonce) return receiveUnderUsedNonce(known, channel!, m, change.applied, out)
      }
      return receive(known, m, change.sender, ctx, out, change.decryptedSecret, { headBlock: change.headBlock, chainUnreachable: change.chainUnreachable })
    }
  }
}

function receive(
  state: NodeState,
  message: Signed<Message>,
  sender: Address,
  ctx: TransitionContext,
  out: Effect[],
  decryptedSecret: DecryptedSecret | undefined,
  seen: ChainSeen,
): NodeState {
  switch (message.type) {
    case 'LockedTransfer':
      return receiveLockedTransfer(state, message, sender, ctx, out, decryptedSecret, seen)
    case 'RefundTransfer':
      return receiveLockedTransfer(state, message, sender, ctx, out, undefined, seen)
    case 'Unlock':
      return receiveUnlock(state, message, sender, out)
    case 'LockExpired':
      return receiveLockExpired(state, message, sender, ctx, out)
    case 'SecretRequest':
      return initiatorOnSecretRequest(state, message, sender, out)
    case 'RevealSecret': {
      const secrethash = sha256(message.secret)
      let s = initiatorOnRevealSecret(state, message, secrethash, sender, out)
      s = mediatorOnRevealSecret(s, message, secrethash, sender, out, seen.headBlock)
      return targetLearnsSecret(s, message, secrethash, out)
    }
    case 'WithdrawRequest':
      return receiveWithdrawRequest(state, message, sender, out)
    case 'WithdrawConfirmation':
      return receiveWithdrawConfirmation(state, message, sender, out)
    case 'WithdrawExpired':
      return receiveWithdrawExpired(state, message, sender, ctx, out)
    // Acknowledgements are the delivery layer's; capacity, fee and monitoring messages are for services.
    case 'Processed':
    case 'Delivered':
    case 'PFSCapacityUpdate':
    case 'PFSFeeUpdate':
    case 'RequestMonitoring':
      return state
    case 'ChannelSyncRequest':
      return answerChannelSync(state, getChannel(state, message.token_network_address, message.channel_identifier), message, sender, out)
    case 'ChannelSync':
      return receiveChannelSync(state, getChannel(state, message.token_network_address, message.channel_identifier), message, sender, ctx, out)
  }
}
