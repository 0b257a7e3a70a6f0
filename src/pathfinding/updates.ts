import type { Address } from 'viem'
import type { InvalidMessageError } from '../protocol/errors.ts'
import { packMessage } from '../protocol/messages/pack.ts'
import type { FeeSchedule, PFSCapacityUpdate, PFSFeeUpdate, Signed } from '../protocol/messages/types.ts'
import { encodeMessage, parseMessage } from '../protocol/messages/wire.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'
import { recoverPackedSignerSync } from '../protocol/signature.ts'
import { participantIndex, sameAddress, withParticipant, type PfsChannel, type PfsParticipant } from './channel.ts'
import { networkOf, type PathfindingState } from './network.ts'
import { timestampMicros } from './timestamps.ts'
import { withCode } from '../errors.ts'

/**
 * The rules a PFSCapacityUpdate or PFSFeeUpdate must pass before the service holds it (docs/decisions/0070), as
 * pure functions over the service's view: the cheap field checks first, then the channel, then what is held (so a
 * replay costs no signature recovery), the signature last. A refused update changes nothing; an accepted one comes
 * back as the channel record to store, which the caller puts in the view once it is durable.
 */

/** Every reason an update is refused; the service counts refusals by these names. */
export const updateRefusals = {
  malformed: 'not a well-formed message',
  not_an_update: 'a message of another type than PFSCapacityUpdate or PFSFeeUpdate',
  wrong_chain: "for another chain than the service's",
  out_of_range: 'an amount beyond uint256 or a nonce beyond uint64',
  bad_imbalance_penalty: 'the imbalance penalty is not a curve: at least 2 and at most 100 points, x strictly increasing',
  bad_timestamp: 'the timestamp names no real instant',
  future_timestamp: 'the timestamp is further ahead of the service clock than it allows',
  unknown_token_network: 'a token network the service does not follow',
  unknown_channel:
    'no open channel with this id that the service has confirmed: perhaps one opened in blocks not confirmed yet (the caller may hold it until then)',
  channel_not_open: 'the channel is closed',
  not_a_participant: 'the updating participant is not one of the channel',
  wrong_partner: "the other participant is not the updating participant's partner in the channel",
  stale: 'not newer than the update held from this participant (nonces, or timestamp)',
  bad_signature: 'not signed by the updating participant',
} as const

export type UpdateRefusal = keyof typeof updateRefusals

export type UpdateOutcome =
  /** Newer than the one held: `channel` is the record with it, to store and put in the view. */
  | { outcome: 'accepted'; channel: PfsChannel }
  /** Exactly the update held, again: nothing to change. */
  | { outcome: 'resent' }
  | { outcome: 'refused'; reason: UpdateRefusal; detail?: string }

export type UpdateContext = {
  /** The curve engine the checker's host chose: an update's signer is recovered with it. */
  curve: Secp256k1Engine
  /** The service's clock, in milliseconds since 1970 (fee update timestamps must not be ahead of it by more than `maxClockAheadMs`). */
  now: number
  /** How far ahead of `now` a fee update's timestamp may be: 1 hour by default, as raiden-services. */
  maxClockAheadMs?: number
}

export const MAX_CLOCK_AHEAD_MS = 3_600_000
/** Raiden's nodes send 21 points (NUM_DISCRETISATION_POINTS); every point costs the search time in each fee computed. */
export const MAX_PENALTY_POINTS = 100

const UINT64_MAX = (1n << 64n) - 1n
const UINT256_MAX = (1n << 256n) - 1n

const refuse = (reason: UpdateRefusal, detail?: string): UpdateOutcome => ({ outcome: 'refused', reason, ...(detail === undefined ? {} : { detail }) })

/** Reads one wire line as an update (fields checked by the message parser; the signature is checked later). */
export function readUpdate(
  line: string,
): { ok: true; update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate> } | { ok: false; reason: UpdateRefusal; detail: string } {
  let message: ReturnType<typeof parseMessage>
  try {
    message = parseMessage(line)
  } catch (error) {
    const malformed = withCode<InvalidMessageError>(error, 'INVALID_MESSAGE')
    if (malformed) return { ok: false, reason: 'malformed', detail: malformed.shortMessage }
    throw error
  }
  if (message.type !== 'PFSCapacityUpdate' && message.type !== 'PFSFeeUpdate') return { ok: false, reason: 'not_an_update', detail: message.type }
  return { ok: true, update: message }
}

/** Checks a received update against the state and says what to do with it. */
export function checkUpdate(state: PathfindingState, update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>, context: UpdateContext): UpdateOutcome {
  return update.type === 'PFSCapacityUpdate' ? checkCapacityUpdate(state, update, context) : checkFeeUpdate(state, update, context)
}

/** The channel an update names and the updater's place in it, or why there is none to update. */
function channelOf(
  state: PathfindingState,
  update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>,
): { channel: PfsChannel; index: 0 | 1 } | { refused: UpdateOutcome } {
  const id = update.canonical_identifier
  if (id.chain_identifier !== state.chainId) return { refused: refuse('wrong_chain', `chain ${id.chain_identifier}`) }
  const view = networkOf(state, id.token_network_address)
  if (!view) return { refused: refuse('unknown_token_network', id.token_network_address) }
  const channel = view.channels.get(id.channel_identifier.toString())
  if (!channel) return { refused: refuse('unknown_channel', `channel ${id.channel_identifier}`) }
  if (channel.closed) return { refused: refuse('channel_not_open', `channel ${id.channel_identifier}`) }
  const index = participantIndex(channel, update.updating_participant)
  if (index === -1) return { refused: refuse('not_a_participant', update.updating_participant) }
  return { channel, index }
}

function signedBy(curve: Secp256k1Engine, update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>, participant: Address): UpdateOutcome | undefined {
  let signer: Address
  try {
    signer = recoverPackedSignerSync(curve, packMessage(update), update.signature)
  } catch {
    return refuse('bad_signature', 'recovers no key')
  }
  return sameAddress(signer, participant) ? undefined : refuse('bad_signature', `signed by ${signer}`)
}

/**
 * Whether `update` is newer than `held`, both from the same participant. Its two nonces (its own balance proof's and
 * the partner's, as it knows them) only grow: neither may go back, and one must go up; with both the same, only a
 * deposit can have changed what it says (withdrawals and locks all take a nonce), so neither capacity may go down.
 * Any older update a third party replays is therefore refused.
 */
export function isNewerCapacityUpdate(update: PFSCapacityUpdate, held: PFSCapacityUpdate | undefined): boolean {
  if (!held) return true
  if (update.updating_nonce < held.updating_nonce || update.other_nonce < held.other_nonce) return false
  if (update.updating_nonce > held.updating_nonce || update.other_nonce > held.other_nonce) return true
  return update.updating_capacity >= held.updating_capacity && update.other_capacity >= held.other_capacity
}

export function checkCapacityUpdate(state: PathfindingState, update: Signed<PFSCapacityUpdate>, context: Pick<UpdateContext, 'curve'>): UpdateOutcome {
  if (update.updating_nonce > UINT64_MAX || update.other_nonce > UINT64_MAX) return refuse('out_of_range', 'nonce')
  for (const field of ['updating_capacity', 'other_capacity', 'reveal_timeout'] as const) if (update[field] > UINT256_MAX) return refuse('out_of_range', field)
  const found = channelOf(state, update)
  if ('refused' in found) return found.refused
  const { channel, index } = found
  if (!sameAddress(update.other_participant, channel.participants[1 - index]!.address)) return refuse('wrong_partner', update.other_participant)
  const side = channel.participants[index]
  const held = side.capacityUpdate
  if (held && encodeMessage(held) === encodeMessage(update)) return { outcome: 'resent' }
  if (!isNewerCapacityUpdate(update, held))
    return refuse('stale', `nonces ${update.updating_nonce}/${update.other_nonce}, held ${held?.updating_nonce}/${held?.other_nonce}`)
  const forged = signedBy(context.curve, update, side.address)
  if (forged) return forged
  return { outcome: 'accepted', channel: withParticipant(channel, index, { ...side, capacityUpdate: update } satisfies PfsParticipant) }
}

/** Why a fee schedule cannot be used, or undefined: amounts within uint256, the imbalance penalty a curve (x strictly increasing). */
export function whyBadSchedule(schedule: FeeSchedule): { reason: UpdateRefusal; detail: string } | undefined {
  if (schedule.flat > UINT256_MAX) return { reason: 'out_of_range', detail: 'flat' }
  if (schedule.proportional > UINT256_MAX) return { reason: 'out_of_range', detail: 'proportional' }
  const points = schedule.imbalance_penalty
  if (points === null) return undefined
  if (points.length < 2 || points.length > MAX_PENALTY_POINTS) return { reason: 'bad_imbalance_penalty', detail: `${points.length} points` }
  for (const [i, [x, y]] of points.entries()) {
    if (x > UINT256_MAX || y > UINT256_MAX) return { reason: 'out_of_range', detail: `imbalance_penalty[${i}]` }
    if (i > 0 && x <= points[i - 1]![0]) return { reason: 'bad_imbalance_penalty', detail: `x does not increase at point ${i}` }
  }
  return undefined
}

export function checkFeeUpdate(state: PathfindingState, update: Signed<PFSFeeUpdate>, context: UpdateContext): UpdateOutcome {
  const bad = whyBadSchedule(update.fee_schedule)
  if (bad) return refuse(bad.reason, bad.detail)
  const at = timestampMicros(update.timestamp)
  if (at === undefined) return refuse('bad_timestamp', update.timestamp)
  // Far ahead, it would keep the node's own later updates out once its clock is right again (as raiden-services says).
  if (at > (context.now + (context.maxClockAheadMs ?? MAX_CLOCK_AHEAD_MS)) * 1000) return refuse('future_timestamp', update.timestamp)
  const found = channelOf(state, update)
  if ('refused' in found) return found.refused
  const { channel, index } = found
  const side = channel.participants[index]
  const held = side.feeUpdate
  if (held && encodeMessage(held) === encodeMessage(update)) return { outcome: 'resent' }
  if (held && at <= timestampMicros(held.timestamp)!) return refuse('stale', `timestamp ${update.timestamp}, held ${held.timestamp}`)
  const forged = signedBy(context.curve, update, side.address)
  if (forged) return forged
  return { outcome: 'accepted', channel: withParticipant(channel, index, { ...side, feeUpdate: update }) }
}
