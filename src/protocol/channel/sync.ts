import { sha256, type Address, type Hex } from 'viem'
import { balanceHash } from '../balanceProof.ts'
import { locksroot } from '../locks.ts'
import { packSyncProof } from '../messages/sign.ts'
import type { ChannelSync, ChannelSyncRequest, Signed, SyncBalanceProof, WireLock } from '../messages/types.ts'
import { recoverPackedSignerSync } from '../signature.ts'
import type { Secp256k1Engine } from '../secp256k1.ts'
import { putChannel, sameAddress, takeMessageId, type TransitionContext } from '../state/access.ts'
import type { Effect } from '../state/effects.ts'
import type { BalanceProofState, Channel, ChannelEnd, NodeState, PendingLock } from '../state/types.ts'
import { sendUnordered } from '../transfer/send.ts'
import { takesNonce } from './usedNonce.ts'

/**
 * A node restored from a copy (docs/decisions/0034) may hold a state older than what it signed: the copies lag
 * behind. Before it signs anything under a nonce of a channel again, it asks the partner for the latest of both ends
 * (ChannelSyncRequest) and adopts what the answer (ChannelSync) proves newer. Until then the channel waits: routes skip
 * it, actions on it are refused, and no transition may sign under its nonce (`nonceSignedWhileWaiting`).
 */

/** Whether the channel waits for its partner's ChannelSync after a restore: nothing is signed under its nonce. */
export function waitsForSync(channel: Channel | undefined): boolean {
  return channel?.waitingSync === true
}

export const WAITING_SYNC_REASON = 'the channel waits for its partner to confirm its latest state after a restore'

/** The copy was restored: every channel not settled waits for its partner's sync. No effect: the start asks (`requestChannelSyncs`). */
export function markRestored(state: NodeState, ourHistoryFrom: Record<string, bigint> = {}, openedUpTo?: bigint): NodeState {
  let s: NodeState = openedUpTo === undefined ? state : { ...state, forgottenUpTo: openedUpTo }
  for (const [key, channel] of Object.entries(state.channels)) {
    if (channel.state === 'settled') continue
    const from = ourHistoryFrom[key]
    s = putChannel(s, { ...channel, waitingSync: true, ...(from !== undefined ? { ourHistoryFrom: from } : {}) })
  }
  return s
}

/** A channel of ours opened in a life the store forgot (`forgottenUpTo`) waits for its sync, as a restored one does. */
export function forgottenChannel(state: NodeState, key: string, openedAt: bigint): NodeState {
  const channel = state.channels[key]
  if (!channel || state.forgottenUpTo === undefined || openedAt > state.forgottenUpTo) return state
  return putChannel(state, { ...channel, waitingSync: true, forgotten: true })
}

/** Asks each waiting channel's partner for the latest state (at every start while any waits). */
export function requestChannelSyncs(state: NodeState, out: Effect[]): NodeState {
  let s = state
  for (const channel of Object.values(state.channels)) {
    if (!channel.waitingSync) continue
    const [id, next] = takeMessageId(s)
    const request: ChannelSyncRequest = {
      type: 'ChannelSyncRequest',
      message_identifier: id,
      chain_id: channel.chainId,
      token_network_address: channel.tokenNetwork,
      channel_identifier: channel.id,
    }
    s = sendUnordered(next, channel.partner, request, out)
  }
  return s
}

const plain = ({ expiration, amount, secrethash }: PendingLock): WireLock => ({ expiration, amount, secrethash })

function asSyncProof(proof: BalanceProofState | null): SyncBalanceProof | null {
  if (!proof) return null
  return {
    nonce: proof.nonce,
    transferred_amount: proof.transferredAmount,
    locked_amount: proof.lockedAmount,
    locksroot: proof.locksroot,
    additional_hash: proof.messageHash,
    ...(proof.signature ? { signature: proof.signature } : {}),
  }
}

function rejected(out: Effect[], sender: Address, messageType: string, reason: string): NodeState | undefined {
  out.push({ type: 'event', event: { type: 'messageRejected', sender, messageType, reason } })
  return undefined
}

/**
 * The partner restored a copy and asks: answer with what we hold of both ends. Its end as we applied it: the last
 * nonce, its latest balance proof with its own signature, its locks; ours: the last nonce, our latest proof (signed by
 * the shell as it sends, the signature it had) and our locks. Nothing changes here but the message id.
 */
export function answerChannelSync(
  state: NodeState,
  channel: Channel | undefined,
  message: Signed<ChannelSyncRequest>,
  sender: Address,
  out: Effect[],
): NodeState {
  if (!channel || !sameAddress(sender, channel.partner) || message.chain_id !== channel.chainId)
    return rejected(out, sender, message.type, 'not a partner of this channel') ?? state
  const [id, s] = takeMessageId(state)
  const theirProof = channel.partnerEnd.balanceProof?.signature ? asSyncProof(channel.partnerEnd.balanceProof) : null
  const answer: ChannelSync = {
    type: 'ChannelSync',
    message_identifier: id,
    chain_id: channel.chainId,
    token_network_address: channel.tokenNetwork,
    channel_identifier: channel.id,
    requester_nonce: channel.partnerEnd.nonce,
    requester_balance_proof: theirProof,
    requester_locks: theirProof ? channel.partnerEnd.locks.map(plain) : [],
    sender_nonce: channel.our.nonce,
    sender_balance_proof: asSyncProof(channel.our.balanceProof),
    sender_locks: channel.our.balanceProof ? channel.our.locks.map(plain) : [],
  }
  return sendUnordered(s, channel.partner, answer, out)
}

type ProvenEnd = { proof: BalanceProofState; locks: WireLock[] }

/** A proof in a ChannelSync, checked: signed by `signer` over this channel, its locks matching its locksroot and locked amount. */
function provenEnd(
  curve: Secp256k1Engine,
  message: ChannelSync,
  proof: SyncBalanceProof | null,
  locks: WireLock[],
  signer: Address,
): ProvenEnd | string | undefined {
  if (!proof) return locks.length ? 'locks without a balance proof' : undefined
  if (!proof.signature) return 'a balance proof without its signature'
  let recovered: Address
  try {
    recovered = recoverPackedSignerSync(curve, packSyncProof(message, proof), proof.signature)
  } catch {
    return 'a balance proof whose signature recovers no key'
  }
  if (!sameAddress(recovered, signer)) return `a balance proof signed by ${recovered}, not by ${signer}`
  if (locksroot(locks) !== proof.locksroot.toLowerCase()) return 'locks that do not match the locksroot of their balance proof'
  if (locks.reduce((sum, l) => sum + l.amount, 0n) !== proof.locked_amount) return 'locks that do not add up to the locked amount of their balance proof'
  return {
    locks,
    proof: {
      nonce: proof.nonce,
      transferredAmount: proof.transferred_amount,
      lockedAmount: proof.locked_amount,
      locksroot: proof.locksroot,
      balanceHash: balanceHash({ transferredAmount: proof.transferred_amount, lockedAmount: proof.locked_amount, locksroot: proof.locksroot }),
      messageHash: proof.additional_hash,
      signature: proof.signature,
    },
  }
}

/** The secret of `secrethash` if this state knows it (a payment of ours, a transfer we forward or receive). */
function knownSecret(state: NodeState, secrethash: Hex): Hex | undefined {
  return state.initiators[secrethash]?.secret ?? state.mediators[secrethash]?.secret ?? state.targets[secrethash]?.secret
}

/** The locks of a newer proof, keeping what we knew of each (secret, the nonce that added ours). */
function adoptLocks(state: NodeState, known: PendingLock[], locks: WireLock[], addedAt: bigint | undefined): PendingLock[] {
  return locks.map((l) => {
    const same = known.find((k) => k.secrethash.toLowerCase() === l.secrethash.toLowerCase() && k.amount === l.amount && k.expiration === l.expiration)
    if (same) return same
    const secret = knownSecret(state, l.secrethash)
    return { ...l, ...(secret && sha256(secret) === l.secrethash.toLowerCase() ? { secret } : {}), ...(addedAt !== undefined ? { nonce: addedAt } : {}) }
  })
}

/**
 * The partner's answer to our request: adopt, for each end, what is newer and proven, then the channel is synced.
 * Our end: the partner's copy of our latest proof, if our signature is on it and its nonce is above ours (the copy
 * lagged), with the locks pending in it; our nonce then is the highest of ours, the proof's and the partner's count
 * of our nonces (a count above the truth only skips nonces, which costs nothing). The partner's end likewise, with
 * its signature. An answer that does not prove what it claims changes nothing: the channel keeps waiting.
 */
export function receiveChannelSync(
  state: NodeState,
  channel: Channel | undefined,
  message: Signed<ChannelSync>,
  sender: Address,
  ctx: Pick<TransitionContext, 'curve'>,
  out: Effect[],
): NodeState {
  if (!channel || !sameAddress(sender, channel.partner) || message.chain_id !== channel.chainId)
    return rejected(out, sender, message.type, 'not a partner of this channel') ?? state
  // A late or repeated answer for a channel already synced: what it says is at best what we adopted then.
  if (!channel.waitingSync) return state
  const ours = provenEnd(ctx.curve, message, message.requester_balance_proof, message.requester_locks, state.address)
  if (typeof ours === 'string') return rejected(out, sender, message.type, `our end: ${ours}`) ?? state
  const theirs = provenEnd(ctx.curve, message, message.sender_balance_proof, message.sender_locks, channel.partner)
  if (typeof theirs === 'string') return rejected(out, sender, message.type, `the partner's end: ${theirs}`) ?? state

  const ourNewer = ours && ours.proof.nonce > (channel.our.balanceProof?.nonce ?? 0n) ? ours : undefined
  const theirNewer = theirs && theirs.proof.nonce > (channel.partnerEnd.balanceProof?.nonce ?? 0n) ? theirs : undefined
  // Our own proof is kept without our signature, as the proofs we send are (the shell signs them).
  const { signature: _signature, ...ourProof } = ourNewer?.proof ?? {}
  const our: ChannelEnd = {
    ...channel.our,
    nonce: max(channel.our.nonce, message.requester_nonce, ourNewer?.proof.nonce ?? 0n),
    ...(ourNewer ? { balanceProof: ourProof as BalanceProofState, locks: adoptLocks(state, channel.our.locks, ourNewer.locks, ourNewer.proof.nonce) } : {}),
  }
  const partnerEnd: ChannelEnd = {
    ...channel.partnerEnd,
    nonce: max(channel.partnerEnd.nonce, message.sender_nonce, theirNewer?.proof.nonce ?? 0n),
    ...(theirNewer ? { balanceProof: theirNewer.proof, locks: adoptLocks(state, channel.partnerEnd.locks, theirNewer.locks, undefined) } : {}),
  }
  // A forgotten channel knows our history from the sync on: older proofs of ours are of the life it forgot.
  const { waitingSync: _, forgotten, ...rest } = channel
  if (forgotten) rest.ourHistoryFrom = our.balanceProof?.nonce ?? our.nonce
  // The partner closed while we were wiped, and we answered with the copy's older proof of its: its newer one goes
  // on-chain too (the contract takes a higher nonce until settlement), so what it paid since the copy is not lost.
  const onchain = channel.partnerEnd.onchainNonce ?? 0n
  if (theirNewer && channel.state === 'closed' && sameAddress(channel.closer, channel.partner) && theirNewer.proof.nonce > onchain)
    out.push({
      type: 'transaction',
      transaction: {
        type: 'update',
        tokenNetwork: channel.tokenNetwork,
        channelId: channel.id,
        partner: channel.partner,
        balanceProof: theirNewer.proof,
        ...(channel.closedBlock !== undefined ? { deadline: channel.closedBlock + channel.settleTimeout } : {}),
      },
    })
  out.push({
    type: 'event',
    event: {
      type: 'channelSynced',
      tokenNetwork: channel.tokenNetwork,
      channelId: channel.id,
      partner: channel.partner,
      ourNonce: our.nonce,
      partnerNonce: partnerEnd.nonce,
      adopted: { ours: ourNewer !== undefined, partner: theirNewer !== undefined },
    },
  })
  return putChannel(state, { ...rest, our, partnerEnd })
}

const max = (...values: bigint[]): bigint => values.reduce((a, b) => (b > a ? b : a))

/**
 * Whether a transition's effects sign under our nonce of a channel that waits for its sync in `before`: the one
 * thing a restored node must not do (its copy may lag behind what it signed). The transition refuses such a change.
 */
export function nonceSignedWhileWaiting(before: NodeState, effects: readonly Effect[]): Channel | undefined {
  for (const effect of effects) {
    if (effect.type !== 'send' || !effect.channelKey || !takesNonce(effect.message)) continue
    const channel = before.channels[effect.channelKey]
    if (channel?.waitingSync) return channel
  }
  return undefined
}
