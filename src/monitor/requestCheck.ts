import type { Address } from 'viem'
import type { OnchainChannelState } from '../chain/reads.ts'
import { ZERO_HASH } from '../protocol/balanceProof.ts'
import type { RequestMonitoring, Signed } from '../protocol/messages/types.ts'
import { requestMonitoringSigners } from '../protocol/monitoringRequest.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'
import { encodeMessage } from '../protocol/messages/wire.ts'
import type { StoredRequest } from './records.ts'

/**
 * The rules a RequestMonitoring must pass before the service holds it (docs/decisions/0031), as pure functions: the
 * intake (intake.ts) runs them in this order, the cheap ones first, and counts each refusal by its reason.
 */

/** Every reason a request is refused, with what it means; the status API counts refusals by these names. */
export const refusalReasons = {
  too_large: 'the wire line is longer than the limit',
  rate_limited: 'the peer sent more than its rate allows',
  overloaded: 'too many requests are being checked at once',
  malformed: 'not a well-formed message',
  not_a_request: 'a message of another type',
  wrong_chain: "the balance proof is for another chain than the service's",
  wrong_service_contract: "the reward proof names another MonitoringService contract than the service's",
  zero_nonce: 'the balance proof has nonce 0',
  zero_balance_hash: 'the balance proof has a zero balance hash (nothing transferred; the contract refuses it)',
  reward_too_low: "the reward is below the service's minimum",
  bad_balance_proof_signature: "the balance proof's signature recovers no key",
  bad_non_closing_signature: "the counter-signature is not the non-closing participant's",
  bad_reward_signature: "the reward proof's signature is not the non-closing participant's",
  self_signed: 'the balance proof is signed by the requester itself, not by its partner',
  not_requester: 'it came from another peer than the non-closing participant',
  stale: 'its nonce is not above the one the service holds for this channel and side',
  too_many_channels: 'the requester has the service watch as many channels as it allows',
  unknown_token_network: 'the token network is not one of the registry',
  no_such_channel: 'the two participants have no channel with this id',
  channel_not_open: 'the channel is not open',
  insufficient_deposit: "the requester's UserDeposit balance (planned withdrawals excluded) does not cover the reward",
  chain_unavailable: 'the chain could not be read',
  store_failed: 'the store could not keep it',
  internal_error: 'a bug: the service could not check it',
} as const

export type RefusalReason = keyof typeof refusalReasons

/** What a request is checked against: this service's chain, contract and minimum reward. */
export type RequestContext = {
  chainId: bigint
  monitoringService: Address
  minReward: bigint
  /** The curve engine the service's host chose: the signers are recovered with it. */
  curve: Secp256k1Engine
}

export type Checked = { ok: true; closing: Address } | { ok: false; reason: RefusalReason; detail?: string }

const same = (a: Address, b: Address) => a.toLowerCase() === b.toLowerCase()
const refuse = (reason: RefusalReason, detail?: string): Checked => ({ ok: false, reason, ...(detail === undefined ? {} : { detail }) })

export type FieldsChecked = { ok: true } | { ok: false; reason: RefusalReason; detail?: string }

/**
 * The checks that need nothing but the request and where it came from: its fields, and that the peer it came from is
 * its requester. Cheap: run before anything else.
 */
export function checkFields(request: Signed<RequestMonitoring>, from: Address, context: RequestContext): FieldsChecked {
  const bp = request.balance_proof
  if (bp.chain_id !== context.chainId) return refuse('wrong_chain', `chain ${bp.chain_id}`)
  if (!same(request.monitoring_service_contract_address, context.monitoringService))
    return refuse('wrong_service_contract', request.monitoring_service_contract_address)
  if (bp.nonce === 0n) return refuse('zero_nonce')
  if (bp.balance_hash === ZERO_HASH) return refuse('zero_balance_hash')
  if (request.reward_amount < context.minReward) return refuse('reward_too_low', `${request.reward_amount} < ${context.minReward}`)
  // The transport's peer is authenticated (libp2p: Noise with the peer's key): a request comes from its requester.
  if (!same(from, request.non_closing_participant)) return refuse('not_requester', `from ${from}`)
  return { ok: true }
}

/**
 * The three signatures, over exactly the bytes the contracts check: the reward proof and the counter-signature by the
 * non-closing participant, the balance proof by someone else, the closing participant (returned).
 */
export function checkSignatures(curve: Secp256k1Engine, request: Signed<RequestMonitoring>): Checked {
  const requester = request.non_closing_participant
  const signers = requestMonitoringSigners(curve, request)
  if (signers.reward === undefined) return refuse('bad_reward_signature', 'recovers no key')
  if (!same(signers.reward, requester)) return refuse('bad_reward_signature', `signed by ${signers.reward}`)
  if (signers.nonClosing === undefined) return refuse('bad_non_closing_signature', 'recovers no key')
  if (!same(signers.nonClosing, requester)) return refuse('bad_non_closing_signature', `signed by ${signers.nonClosing}`)
  if (signers.closing === undefined) return refuse('bad_balance_proof_signature')
  if (same(signers.closing, requester)) return refuse('self_signed')
  return { ok: true, closing: signers.closing }
}

/** Every check that needs no state and no chain: `checkFields`, then `checkSignatures`. */
export function checkRequest(request: Signed<RequestMonitoring>, from: Address, context: RequestContext): Checked {
  const fields = checkFields(request, from, context)
  return fields.ok ? checkSignatures(context.curve, request) : fields
}

/**
 * A request against the one the service holds for its channel and side: `new` (none held, or an older one it
 * replaces), `resent` (exactly the one held, byte for byte: acknowledged again, nothing stored), or `stale` (a nonce
 * not above the held one: an older request, or another one under the same nonce). Needs no signature check: the held
 * request's were checked, and a stale one is refused whatever its signatures say. So a peer that replays requests
 * costs the service no signature recovery.
 */
export function compareWithHeld(request: Signed<RequestMonitoring>, held: StoredRequest | undefined): 'new' | 'resent' | 'stale' {
  if (!held) return 'new'
  if (encodeMessage(held.request) === encodeMessage(request)) return 'resent'
  return request.balance_proof.nonce > held.request.balance_proof.nonce ? 'new' : 'stale'
}

/** What the chain says about a request's channel and requester, read at the latest block (chainFacts.ts). */
export type ChainFacts = {
  /** The token network is the registry's network for its token (MonitoringService.monitor refuses any other). */
  tokenNetworkKnown: boolean
  /** The channel id of the two participants now (0 for none). */
  channelId: bigint
  channelState: OnchainChannelState
  /** The requester's UserDeposit balance minus its planned withdrawal. */
  effectiveBalance: bigint
}

/** The chain's part: a registered token network, an open channel of exactly these two participants, a covered reward. */
export function checkChainFacts(request: Signed<RequestMonitoring>, facts: ChainFacts): Checked | undefined {
  if (!facts.tokenNetworkKnown) return refuse('unknown_token_network', request.balance_proof.token_network_address)
  if (facts.channelId !== request.balance_proof.channel_identifier)
    return refuse('no_such_channel', facts.channelId === 0n ? 'no channel' : `their channel is ${facts.channelId}`)
  if (facts.channelState !== 'opened') return refuse('channel_not_open', facts.channelState)
  if (facts.effectiveBalance < request.reward_amount) return refuse('insufficient_deposit', `${facts.effectiveBalance} < ${request.reward_amount}`)
  return undefined
}
