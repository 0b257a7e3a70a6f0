import { bytesToHex, getAddress, hexToBytes, type Address, type Hex } from 'viem'
import { balanceHash, packBalanceProof, packBalanceProofCounter, type PackedBalanceProofParameters } from './balanceProof.ts'
import { messageHash } from './messages/messageHash.ts'
import { packMessage } from './messages/pack.ts'
import type { Delivered, EnvelopeMessage, RequestMonitoring, Signed, SignedBalanceProof } from './messages/types.ts'
import { MessageTypeId } from './messageTypeId.ts'
import { addressOfPublicKey, type Secp256k1Engine } from './secp256k1.ts'
import { serviceAckId } from './serviceAckId.ts'
import { recoverPackedSignerSync, signPackedSync } from './signature.ts'

/**
 * RequestMonitoring (docs/protocol.md §3.3): a node asks a monitoring service to submit, if the partner closes
 * while the node is away, the newest balance proof the partner signed. What the node side builds and what the
 * service checks are both here, so the two cannot drift.
 */

/** The partner's balance proof an envelope message carries, as RequestMonitoring and updateNonClosingBalanceProof take it (§2.4). */
export function signedBalanceProofOf(message: Signed<EnvelopeMessage>): SignedBalanceProof {
  return {
    chain_id: message.chain_id,
    token_network_address: message.token_network_address,
    channel_identifier: message.channel_identifier,
    nonce: message.nonce,
    balance_hash: balanceHash({ transferredAmount: message.transferred_amount, lockedAmount: message.locked_amount, locksroot: message.locksroot }),
    additional_hash: messageHash(message),
    signature: message.signature,
  }
}

function proofParameters(bp: SignedBalanceProof): PackedBalanceProofParameters {
  return {
    tokenNetworkAddress: bp.token_network_address,
    chainId: bp.chain_id,
    channelIdentifier: bp.channel_identifier,
    balanceHash: bp.balance_hash,
    nonce: bp.nonce,
    additionalHash: bp.additional_hash,
  }
}

export type SignRequestMonitoringParameters = {
  /** The partner's (the future closer's) newest balance proof, with its signature. */
  balanceProof: SignedBalanceProof
  /** The MonitoringService contract the reward proof is bound to (the deployment's). */
  monitoringServiceContract: Address
  /** Paid from the requester's UserDeposit to the service whose proof is on-chain at settlement. */
  rewardAmount: bigint
}

/**
 * Signs a RequestMonitoring as the non-closing participant: the type-2 counter-signature over the partner's proof
 * (§2.5, what updateNonClosingBalanceProof checks) and the reward proof over it (§2.8, what MonitoringService.monitor
 * checks).
 */
export function signRequestMonitoring(
  curve: Secp256k1Engine,
  privateKey: Hex,
  { balanceProof, monitoringServiceContract, rewardAmount }: SignRequestMonitoringParameters,
): Signed<RequestMonitoring> {
  const nonClosingParticipant = getAddress(bytesToHex(addressOfPublicKey(curve.publicKey(hexToBytes(privateKey)).subarray(1))))
  const nonClosingSignature = signPackedSync(
    curve,
    privateKey,
    packBalanceProofCounter(MessageTypeId.BalanceProofUpdate, proofParameters(balanceProof), balanceProof.signature),
  )
  const request: RequestMonitoring = {
    type: 'RequestMonitoring',
    balance_proof: balanceProof,
    monitoring_service_contract_address: monitoringServiceContract,
    non_closing_participant: nonClosingParticipant,
    non_closing_signature: nonClosingSignature,
    reward_amount: rewardAmount,
  }
  return { ...request, signature: signPackedSync(curve, privateKey, packMessage(request)) }
}

/** The three signers of a request, each undefined when its signature recovers no key. */
export type RequestMonitoringSigners = {
  /** Who signed the balance proof: the participant whose close the request guards against. */
  closing: Address | undefined
  /** Who counter-signed it (type BalanceProofUpdate). */
  nonClosing: Address | undefined
  /** Who signed the reward proof. */
  reward: Address | undefined
}

function signerOf(curve: Secp256k1Engine, data: Hex | Uint8Array, signature: Hex): Address | undefined {
  try {
    return recoverPackedSignerSync(curve, data, signature)
  } catch {
    return undefined
  }
}

/**
 * Recovers who signed each part of a request, over exactly the bytes the contracts check: the 212-byte balance proof,
 * the 277-byte counter-signature and the 221-byte reward proof. Whether the signers are the right ones is the
 * caller's to judge.
 */
export function requestMonitoringSigners(curve: Secp256k1Engine, request: Signed<RequestMonitoring>): RequestMonitoringSigners {
  const bp = request.balance_proof
  const proof = proofParameters(bp)
  return {
    closing: signerOf(curve, packBalanceProof(proof), bp.signature),
    nonClosing: signerOf(curve, packBalanceProofCounter(MessageTypeId.BalanceProofUpdate, proof, bp.signature), request.non_closing_signature),
    reward: signerOf(curve, packMessage(request), request.signature),
  }
}

/**
 * The id a monitoring service acknowledges a request with: RequestMonitoring has no message_identifier, so the id is
 * derived from what was signed (serviceAckId.ts), the first 8 bytes (a uint64) of keccak256(the 221-byte reward proof
 * || its 65-byte signature). The reward proof covers the counter-signature, which covers the balance proof and its
 * signature, so the id names one exact request; a resend of it gets the same id, any other request another.
 */
export function requestMonitoringAckId(request: Signed<RequestMonitoring>): bigint {
  return serviceAckId(request)
}

/** The acknowledgement of a request: the service's signed Delivered means it holds this request (docs/decisions/0031). */
export function requestMonitoringDelivered(request: Signed<RequestMonitoring>): Delivered {
  return { type: 'Delivered', delivered_message_identifier: requestMonitoringAckId(request) }
}
