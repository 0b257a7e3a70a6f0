import type { Address, Hex } from 'viem'
import { ZERO_HASH } from '../balanceProof.ts'
import { LOCKSROOT_OF_NO_LOCKS, type Lock } from '../locks.ts'
import type { StateChange } from '../state/changes.ts'
import { getChannel, putChannel, sameAddress, without, type TransitionContext } from '../state/access.ts'
import type { BalanceData, Effect } from '../state/effects.ts'
import type { Channel, ChannelEnd, NodeState } from '../state/types.ts'
import { emptyChannelEnd } from './end.ts'
import { orderedSettle } from './settleOrder.ts'
import { WAITING_SYNC_REASON, waitsForSync } from './sync.ts'
import { checkOurProofOnChain } from './usedNonce.ts'
import { channelKey } from './key.ts'
import { actionRejected } from './withdraw.ts'

type Change<T extends StateChange['type']> = Extract<StateChange, { type: T }>

const sameHash = (a: Hex | undefined, b: Hex | undefined) => !!a && !!b && a.toLowerCase() === b.toLowerCase()
const stateEvent = (c: Channel): Effect => ({
  type: 'event',
  event: { type: 'channelStateChanged', tokenNetwork: c.tokenNetwork, channelId: c.id, state: c.state },
})

export function onChannelOpened(state: NodeState, change: Change<'channelOpened'>, out: Effect[]): NodeState {
  const us = state.address
  const partner = sameAddress(change.participant1, us) ? change.participant2 : sameAddress(change.participant2, us) ? change.participant1 : undefined
  if (!partner || getChannel(state, change.tokenNetwork, change.channelId)) return state
  const channel: Channel = {
    chainId: state.chainId,
    tokenNetwork: change.tokenNetwork,
    token: state.tokenNetworks[change.tokenNetwork]?.token ?? change.tokenNetwork,
    id: change.channelId,
    partner,
    settleTimeout: change.settleTimeout,
    revealTimeout: change.revealTimeout,
    openedBlock: change.blockNumber,
    state: 'opened',
    our: emptyChannelEnd(us),
    partnerEnd: emptyChannelEnd(partner),
  }
  out.push(stateEvent(channel))
  return putChannel(state, channel)
}

/** Applies `update` to the end of `participant` in a channel we are in; other channels are not ours to track. */
function updateEnd(state: NodeState, tokenNetwork: Address, channelId: bigint, participant: Address, update: (end: ChannelEnd) => ChannelEnd): NodeState {
  const channel = getChannel(state, tokenNetwork, channelId)
  if (!channel) return state
  if (sameAddress(participant, channel.our.address)) return putChannel(state, { ...channel, our: update(channel.our) })
  if (sameAddress(participant, channel.partner)) return putChannel(state, { ...channel, partnerEnd: update(channel.partnerEnd) })
  return state
}

export function onChannelDeposit(state: NodeState, change: Change<'channelDeposit'>, out: Effect[]): NodeState {
  // Only a deposit that grows an end of one of our channels is news (the API's push events).
  const end = endOf(getChannel(state, change.tokenNetwork, change.channelId), change.participant)
  if (end && change.totalDeposit > end.deposit) {
    out.push({
      type: 'event',
      event: {
        type: 'channelDeposit',
        tokenNetwork: change.tokenNetwork,
        channelId: change.channelId,
        participant: change.participant,
        totalDeposit: change.totalDeposit,
      },
    })
  }
  return updateEnd(state, change.tokenNetwork, change.channelId, change.participant, (end) =>
    change.totalDeposit > end.deposit ? { ...end, deposit: change.totalDeposit } : end,
  )
}

function endOf(channel: Channel | undefined, participant: Address): ChannelEnd | undefined {
  if (!channel) return undefined
  return sameAddress(participant, channel.our.address) ? channel.our : sameAddress(participant, channel.partner) ? channel.partnerEnd : undefined
}

export function onChannelWithdraw(state: NodeState, change: Change<'channelWithdraw'>, out: Effect[]): NodeState {
  const end = endOf(getChannel(state, change.tokenNetwork, change.channelId), change.participant)
  if (end && change.totalWithdraw > end.withdrawn) {
    out.push({
      type: 'event',
      event: {
        type: 'channelWithdraw',
        tokenNetwork: change.tokenNetwork,
        channelId: change.channelId,
        participant: change.participant,
        totalWithdraw: change.totalWithdraw,
      },
    })
  }
  return updateEnd(state, change.tokenNetwork, change.channelId, change.participant, (end) => ({
    ...end,
    withdrawn: change.totalWithdraw > end.withdrawn ? change.totalWithdraw : end.withdrawn,
    pendingWithdraws: end.pendingWithdraws.filter((w) => w.totalWithdraw > change.totalWithdraw),
  }))
}

/** The user closes: submit the partner's latest balance proof (or none). */
export function closeChannel(state: NodeState, tokenNetwork: Address, channelId: bigint, out: Effect[]): NodeState {
  const channel = getChannel(state, tokenNetwork, channelId)
  if (channel?.state !== 'opened') return actionRejected(state, 'close', channel ? `channel is ${channel.state}` : 'no such channel', out)
  // Closing with the partner's proof the copy holds could give up what it paid us since: wait for the sync.
  if (waitsForSync(channel)) return actionRejected(state, 'close', WAITING_SYNC_REASON, out)
  out.push({
    type: 'transaction',
    transaction: { type: 'close', tokenNetwork, channelId, partner: channel.partner, balanceProof: channel.partnerEnd.balanceProof },
  })
  const closing: Channel = { ...channel, state: 'closing' }
  out.push(stateEvent(closing))
  return putChannel(state, closing)
}

export function onChannelClosed(state: NodeState, change: Change<'channelClosed'>, out: Effect[]): NodeState {
  const channel = getChannel(state, change.tokenNetwork, change.channelId)
  if (!channel || channel.state === 'closed' || channel.state === 'settling' || channel.state === 'settled') return state
  const partnerClosed = sameAddress(change.closer, channel.partner)
  // The partner closed with a proof of ours: one this state does not know we signed means the state is stale.
  const checked = partnerClosed ? checkOurProofOnChain(state, channel, { ...change, event: 'ChannelClosed' }) : state
  if (checked.stale) return checked
  // The closer submitted the other side's proof: ours if the partner closed, the partner's if we did.
  const nonCloser = partnerClosed ? 'our' : 'partnerEnd'
  let next: Channel = {
    ...channel,
    state: 'closed',
    closedBlock: change.blockNumber,
    closer: change.closer,
    [nonCloser]: { ...channel[nonCloser], onchainBalanceHash: change.nonce > 0n ? change.balanceHash : ZERO_HASH, onchainNonce: change.nonce },
  }
  const proof = channel.partnerEnd.balanceProof
  if (partnerClosed && proof && proof.nonce > 0n && proof.balanceHash !== ZERO_HASH) {
    // The partner may have closed with an old proof of ours; we answer with its latest proof of its own.
    out.push({
      type: 'transaction',
      transaction: {
        type: 'update',
        tokenNetwork: channel.tokenNetwork,
        channelId: channel.id,
        partner: channel.partner,
        balanceProof: proof,
        // The closer may settle from the block after the settle block on: the update counts until then.
        deadline: change.blockNumber + channel.settleTimeout,
      },
    })
    next = { ...next, updatePending: true }
  }
  out.push(stateEvent(next))
  return putChannel(state, next)
}

export function onNonClosingUpdated(state: NodeState, change: Change<'nonClosingUpdated'>): NodeState {
  // After our close, the partner submitted a proof of ours: one this state does not know we signed means it is stale.
  const channel = getChannel(state, change.tokenNetwork, change.channelId)
  if (channel && sameAddress(change.closer, state.address)) {
    const checked = checkOurProofOnChain(state, channel, { ...change, event: 'NonClosingBalanceProofUpdated' })
    if (checked.stale) return checked
  }
  const updated = updateEnd(state, change.tokenNetwork, change.channelId, change.closer, (end) => ({
    ...end,
    onchainBalanceHash: change.balanceHash,
    onchainNonce: change.nonce,
  }))
  // Ours, or a monitoring service's with the proof ours carries: the update we waited for is on chain. An older
  // proof (a monitoring service given an earlier one) leaves ours on its way.
  const landed = channel?.updatePending && sameAddress(change.closer, channel.partner) && change.nonce >= (channel.partnerEnd.balanceProof?.nonce ?? 0n)
  const after = landed ? getChannel(updated, change.tokenNetwork, change.channelId) : undefined
  return after ? putChannel(updated, withoutUpdatePending(after)) : updated
}

const withoutUpdatePending = ({ updatePending: _, ...channel }: Channel): Channel => channel

const ZERO_BALANCE: BalanceData = { transferredAmount: 0n, lockedAmount: 0n, locksroot: LOCKSROOT_OF_NO_LOCKS }

/** The balance data whose hash the contract holds for `end`, if it is the latest proof the state knows. */
function onchainBalance(end: ChannelEnd): BalanceData | undefined {
  const hash = end.onchainBalanceHash ?? ZERO_HASH
  if (hash === ZERO_HASH) return ZERO_BALANCE
  const bp = end.balanceProof
  return bp && sameHash(bp.balanceHash, hash) ? { transferredAmount: bp.transferredAmount, lockedAmount: bp.lockedAmount, locksroot: bp.locksroot } : undefined
}

/** On each block: settle channels whose settle window has passed. */
export function settleOnBlock(state: NodeState, out: Effect[]): NodeState {
  let s = state
  for (const channel of Object.values(state.channels)) {
    if (channel.state !== 'closed' || channel.closedBlock === undefined) continue
    // The closer waits one reveal timeout longer, so the two sides rarely both pay for a settle.
    const delay = sameAddress(channel.closer, channel.our.address) ? channel.revealTimeout : 0n
    if (state.blockNumber <= channel.closedBlock + channel.settleTimeout + delay) continue
    // Our update is on its way (the contract takes it until someone settles): the settle waits for it to land or fail.
    if (channel.updatePending) continue
    if (channel.settleNotBefore !== undefined && state.blockNumber < channel.settleNotBefore) continue
    const ours = onchainBalance(channel.our)
    const theirs = onchainBalance(channel.partnerEnd)
    if (!theirs) continue // we cannot rebuild a proof the contract holds: leave settling to the partner
    if (!ours) {
      // The partner closed with an older proof of ours: its preimage is in the stored history.
      out.push({
        type: 'transaction',
        transaction: {
          type: 'settleWithHistory',
          tokenNetwork: channel.tokenNetwork,
          channelId: channel.id,
          our: channel.our.address,
          ourBalanceHash: channel.our.onchainBalanceHash!,
          partner: channel.partner,
          partnerBalance: theirs,
        },
      })
      const next: Channel = { ...channel, state: 'settling' }
      out.push(stateEvent(next))
      s = putChannel(s, next)
      continue
    }
    out.push({
      type: 'transaction',
      transaction: orderedSettle(
        channel.tokenNetwork,
        channel.id,
        { address: channel.our.address, balance: ours },
        { address: channel.partner, balance: theirs },
      ),
    })
    const next: Channel = { ...channel, state: 'settling' }
    out.push(stateEvent(next))
    s = putChannel(s, next)
  }
  return s
}

/** On each block: refund our locks of settled channels the partner left unlocked. */
export function unlockOnBlock(state: NodeState, out: Effect[]): NodeState {
  let s = state
  for (const channel of Object.values(state.channels)) {
    const at = channel.our.unlockAt
    if (channel.state !== 'settled' || channel.our.unlocked || at === undefined || state.blockNumber < at) continue
    const locks = channel.our.settledLocksroot && locksFor(channel.our, channel.our.settledLocksroot)
    if (locks) out.push(unlockEffect(channel, channel.our.address, locks))
    else
      out.push({
        type: 'transaction',
        transaction: {
          type: 'unlockWithHistory',
          tokenNetwork: channel.tokenNetwork,
          channelId: channel.id,
          receiver: channel.partner,
          sender: channel.our.address,
          nonce: channel.our.onchainNonce ?? 0n,
        },
      })
    const { unlockAt: _, ...our } = channel.our
    s = putChannel(s, { ...channel, our })
  }
  return s
}

/** The locks whose concatenation hashes to `locksroot` for `end`, if they are its latest proof's. */
function locksFor(end: ChannelEnd, locksroot: Hex): Lock[] | undefined {
  return end.balanceProof && sameHash(end.balanceProof.locksroot, locksroot)
    ? end.locks.map(({ expiration, amount, secrethash }) => ({ expiration, amount, secrethash }))
    : undefined
}

const hasLocks = (root: Hex) => !sameHash(root, LOCKSROOT_OF_NO_LOCKS) && !sameHash(root, ZERO_HASH)

export function onChannelSettled(state: NodeState, change: Change<'channelSettled'>, out: Effect[]): NodeState {
  const channel = getChannel(state, change.tokenNetwork, change.channelId)
  if (!channel) return state
  const ourRoot = sameAddress(change.participant1, channel.our.address) ? change.participant1Locksroot : change.participant2Locksroot
  const theirRoot = sameAddress(change.participant1, channel.our.address) ? change.participant2Locksroot : change.participant1Locksroot
  let next: Channel = {
    ...channel,
    state: 'settled',
    settledBlock: change.blockNumber,
    our: { ...channel.our, settledLocksroot: ourRoot, unlocked: !hasLocks(ourRoot) },
    partnerEnd: { ...channel.partnerEnd, settledLocksroot: theirRoot, unlocked: !hasLocks(theirRoot) },
  }
  // Claim the partner's locks whose secret made it on-chain in time, and take back our unclaimed ones.
  if (hasLocks(theirRoot)) {
    const locks = locksFor(channel.partnerEnd, theirRoot)
    const claimable = locks?.some((l) => {
      const at = state.registeredSecrets[l.secrethash]
      return at !== undefined && at < l.expiration
    })
    if (locks && claimable) out.push(unlockEffect(channel, channel.partner, locks))
    else next = { ...next, partnerEnd: { ...next.partnerEnd, unlocked: true } }
  }
  if (hasLocks(ourRoot)) {
    const locks = locksFor(channel.our, ourRoot)
    const claimed = (l: Lock) => {
      const at = state.registeredSecrets[l.secrethash]
      return at !== undefined && at < l.expiration
    }
    // Settled on an older proof of ours: its locks are in the stored history. Whether the partner can claim some
    // is unknown here, so leave the unlock to it for a reveal timeout, as when it can.
    if (!locks) next = { ...next, our: { ...next.our, unlockAt: change.blockNumber + channel.revealTimeout } }
    else if (locks.every(claimed)) next = { ...next, our: { ...next.our, unlocked: true } }
    // The partner unlocks what it can claim, which refunds us the rest in the same call; we do it ourselves
    // at once only when it has nothing to claim, or after a reveal timeout if it did not.
    else if (!locks.some(claimed)) out.push(unlockEffect(channel, channel.our.address, locks))
    else next = { ...next, our: { ...next.our, unlockAt: change.blockNumber + channel.revealTimeout } }
  }
  out.push(stateEvent(next))
  return dropTasksOf(removeIfDone(putChannel(state, next), next), channelKey(channel.tokenNetwork, channel.id))
}

export function onChannelUnlocked(state: NodeState, change: Change<'channelUnlocked'>): NodeState {
  const channel = getChannel(state, change.tokenNetwork, change.channelId)
  if (!channel) return state
  const side = sameAddress(change.sender, channel.our.address) ? 'our' : 'partnerEnd'
  const next: Channel = { ...channel, [side]: { ...channel[side], unlocked: true } }
  return removeIfDone(putChannel(state, next), next)
}

/** A settled channel with nothing left to unlock is forgotten. */
function removeIfDone(state: NodeState, channel: Channel): NodeState {
  if (channel.state !== 'settled' || !channel.our.unlocked || !channel.partnerEnd.unlocked) return state
  return { ...state, channels: without(state.channels, channelKey(channel.tokenNetwork, channel.id)) }
}

/** Transfers through a settled channel can no longer complete off-chain. */
function dropTasksOf(state: NodeState, key: string): NodeState {
  const keep = <T extends { channelKey?: string; payerChannelKey?: string; payeeChannelKey?: string }>(r: Record<Hex, T>) =>
    Object.fromEntries(Object.entries(r).filter(([, t]) => t.channelKey !== key && t.payerChannelKey !== key && t.payeeChannelKey !== key)) as Record<Hex, T>
  return { ...state, targets: keep(state.targets), mediators: keep(state.mediators) }
}

export function onSecretRegistered(state: NodeState, change: Change<'secretRegistered'>): NodeState {
  if (state.registeredSecrets[change.secrethash] !== undefined) return state
  return { ...state, registeredSecrets: { ...state.registeredSecrets, [change.secrethash]: change.blockNumber } }
}

export function onTransactionFailed(state: NodeState, change: Change<'transactionFailed'>, out: Effect[]): NodeState {
  if (change.tokenNetwork === undefined || change.channelId === undefined) return state
  const channel = getChannel(state, change.tokenNetwork, change.channelId)
  if (!channel) return state
  // Our update failed for good: the settle goes on with the proofs the chain holds.
  if (change.transaction === 'update') return channel.updatePending ? putChannel(state, withoutUpdatePending(channel)) : state
  const back: Partial<Record<string, Channel['state']>> = { close: 'opened', settle: 'closed', cooperativeSettle: 'opened' }
  const revert = back[change.transaction]
  if (!revert || (change.transaction === 'close' && channel.state !== 'closing') || (change.transaction !== 'close' && channel.state !== 'settling'))
    return state
  // A failed settle is tried again after a reveal timeout, unless the partner's settle lands first.
  const next: Channel = {
    ...channel,
    state: revert,
    ...(change.transaction === 'settle' ? { settleNotBefore: state.blockNumber + channel.revealTimeout } : {}),
  }
  out.push(stateEvent(next))
  return putChannel(state, next)
}

export type { TransitionContext }

/** The unlock of `sender`'s locks in the channel: pays the partner what the chain says it can claim, refunds the rest. */
function unlockEffect(channel: Channel, sender: Address, locks: Lock[]): Effect {
  const receiver = sameAddress(sender, channel.our.address) ? channel.partner : channel.our.address
  return { type: 'transaction', transaction: { type: 'unlock', tokenNetwork: channel.tokenNetwork, channelId: channel.id, receiver, sender, locks } }
}
