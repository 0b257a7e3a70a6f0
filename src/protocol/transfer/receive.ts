import { sha256, type Address, type Hex } from 'viem'
import { distributable } from '../channel/amounts.ts'
import { receivePartnerProof, type Verdict } from '../channel/incoming.ts'
import { channelKey } from '../channel/key.ts'
import type { EnvelopeMessage, LockExpired, LockedTransfer, RefundTransfer, Signed, Unlock } from '../messages/types.ts'
import { blockNow, getChannel, putChannel, sameAddress, type TransitionContext } from '../state/access.ts'
import type { ChainSeen, DecryptedSecret } from '../state/changes.ts'
import type { Effect } from '../state/effects.ts'
import type { Channel, ChannelEnd, NodeState } from '../state/types.ts'
import { initiatorOnRefund } from './initiator.ts'
import { mediatorOnPayerResolved, mediatorOnRefund, startMediator } from './mediator.ts'
import { sendProcessed } from './send.ts'
import { endTarget, startTarget } from './target.ts'

const same = (a: Hex, b: Hex) => a.toLowerCase() === b.toLowerCase()

function rejected(sender: Address, message: EnvelopeMessage, reason: string, out: Effect[], unknownChannel?: true): void {
  out.push({ type: 'event', event: { type: 'messageRejected', sender, messageType: message.type, reason, ...(unknownChannel ? { unknownChannel } : {}) } })
}

/**
 * The common path of every balance proof from a partner under a new nonce (one already used never comes here: see
 * usedNonce.ts): find the channel, check the new proof, then let `apply` act on the result.
 */
function receiveEnvelope<M extends EnvelopeMessage>(
  state: NodeState,
  message: Signed<M>,
  sender: Address,
  out: Effect[],
  check: (channel: Channel) => Verdict<ChannelEnd>,
  apply: (state: NodeState, channel: Channel) => NodeState,
): NodeState {
  const channel = getChannel(state, message.token_network_address, message.channel_identifier)
  if (!channel) {
    rejected(sender, message, `unknown channel ${message.channel_identifier}`, out, true)
    return state
  }
  const verdict = check(channel)
  if (!verdict.ok) {
    rejected(sender, message, verdict.reason, out)
    return state
  }
  const updated: Channel = { ...channel, partnerEnd: verdict.value }
  const s = sendProcessed(putChannel(state, updated), sender, message.message_identifier, out)
  return apply(s, updated)
}

/**
 * A lock from a partner (a transfer to us or to forward, or a refund of ours). Its time is judged from `seen`'s head
 * when our synced block is older (blockNow, docs/decisions/0056): how far off its expiry may be, whether a target
 * still asks for the secret, whether a mediator forwards it.
 */
export function receiveLockedTransfer(
  state: NodeState,
  message: Signed<LockedTransfer> | Signed<RefundTransfer>,
  sender: Address,
  ctx: TransitionContext,
  out: Effect[],
  decryptedSecret?: DecryptedSecret,
  seen: ChainSeen = {},
): NodeState {
  const lock = message.lock
  const now = blockNow(state, seen.headBlock)
  return receiveEnvelope(
    state,
    message,
    sender,
    out,
    (channel) => {
      const end = channel.partnerEnd
      if (!sameAddress(message.recipient, state.address)) return { ok: false, reason: 'we are not the recipient' }
      if (!sameAddress(message.token, channel.token)) return { ok: false, reason: 'wrong token' }
      if (end.locks.some((l) => same(l.secrethash, lock.secrethash))) return { ok: false, reason: 'a lock with this secret hash is already pending' }
      if (end.locks.length >= ctx.maxPendingLocks) return { ok: false, reason: `too many pending locks (${ctx.maxPendingLocks})` }
      if (lock.amount === 0n) return { ok: false, reason: 'lock amount is zero' }
      // An already expired lock is still applied (nonces must stay in step); it is simply never paid.
      if (lock.expiration > now + channel.settleTimeout) return { ok: false, reason: 'lock expiration beyond the settle timeout' }
      if (state.registeredSecrets[lock.secrethash] !== undefined) return { ok: false, reason: 'secret already registered on-chain' }
      if (message.type === 'LockedTransfer' && message.metadata.routes.length === 0) return { ok: false, reason: 'metadata has no route' }
      const free = distributable(end, channel.our)
      if (lock.amount > free) return { ok: false, reason: `lock amount ${lock.amount} exceeds the partner's distributable ${free}` }
      return receivePartnerProof(channel, message, sender, { locks: [...end.locks, { ...lock }], transferredAmount: end.balanceProof?.transferredAmount ?? 0n })
    },
    (s, channel) => {
      // A refund is for the payment we started, or for a transfer we forwarded (then it travels on back).
      if (message.type === 'RefundTransfer')
        return s.initiators[lock.secrethash]
          ? initiatorOnRefund(s, message, sender, ctx, out, seen.headBlock)
          : mediatorOnRefund(s, message, sender, ctx, out, seen.headBlock)
      if (sameAddress(message.target, s.address)) return startTarget(s, channel, message, out, decryptedSecret, now)
      if (s.initiators[lock.secrethash] || s.mediators[lock.secrethash]) return s // a transfer coming back to us (a loop): let it expire
      return startMediator(s, channel, message, ctx, out, seen)
    },
  )
}

export function receiveUnlock(state: NodeState, message: Signed<Unlock>, sender: Address, out: Effect[]): NodeState {
  const secrethash = sha256(message.secret)
  return receiveEnvelope(
    state,
    message,
    sender,
    out,
    (channel) => {
      const end = channel.partnerEnd
      const lock = end.locks.find((l) => same(l.secrethash, secrethash))
      if (!lock) return { ok: false, reason: 'no pending lock for this secret' }
      return receivePartnerProof(channel, message, sender, {
        locks: end.locks.filter((l) => l !== lock),
        transferredAmount: (end.balanceProof?.transferredAmount ?? 0n) + lock.amount,
      })
    },
    (s) => {
      const target = s.targets[secrethash]
      if (target) {
        out.push({
          type: 'event',
          event: {
            type: 'paymentReceivedSuccess',
            token: s.tokenNetworks[target.tokenNetwork]?.token ?? target.tokenNetwork,
            tokenNetwork: target.tokenNetwork,
            initiator: target.initiator,
            amount: target.lock.amount,
            paymentId: target.paymentId,
            secrethash,
          },
        })
        return endTarget(s, secrethash)
      }
      return mediatorOnPayerResolved(s, secrethash, channelKey(message.token_network_address, message.channel_identifier), 'unlocked', out)
    },
  )
}

export function receiveLockExpired(state: NodeState, message: Signed<LockExpired>, sender: Address, ctx: TransitionContext, out: Effect[]): NodeState {
  return receiveEnvelope(
    state,
    message,
    sender,
    out,
    (channel) => {
      const end = channel.partnerEnd
      const lock = end.locks.find((l) => same(l.secrethash, message.secrethash))
      if (!lock) return { ok: false, reason: 'no pending lock for this secret hash' }
      if (!sameAddress(message.recipient, state.address)) return { ok: false, reason: 'we are not the recipient' }
      const registered = state.registeredSecrets[lock.secrethash]
      if (registered !== undefined && registered < lock.expiration) return { ok: false, reason: 'the secret was registered on-chain before the lock expired' }
      if (state.blockNumber < lock.expiration + ctx.confirmationBlocks)
        return { ok: false, reason: `lock expires at ${lock.expiration}, confirmed at ${lock.expiration + ctx.confirmationBlocks}` }
      return receivePartnerProof(channel, message, sender, {
        locks: end.locks.filter((l) => l !== lock),
        transferredAmount: end.balanceProof?.transferredAmount ?? 0n,
      })
    },
    (s) => {
      const target = s.targets[message.secrethash]
      if (target && target.channelKey === channelKey(message.token_network_address, message.channel_identifier)) return endTarget(s, message.secrethash)
      return mediatorOnPayerResolved(s, message.secrethash, channelKey(message.token_network_address, message.channel_identifier), 'expired', out)
    },
  )
}
