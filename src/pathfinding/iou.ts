import type { Address, Hex } from 'viem'
import { packIou, type Iou } from '../protocol/iou.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'
import { recoverPackedSignerSync } from '../protocol/signature.ts'
import { sameAddress } from './channel.ts'
import type { PfsErrorName } from './errorCodes.ts'

/**
 * How the pathfinding service is paid (docs/decisions/0072), as raiden-services' `process_payment` (api.py, at the
 * contracts 0.40 it shares with us: sessions named by their expiration block): a sender signs IOUs to the service,
 * one session at a time, each IOU of a session the last one plus the service's fee; the service claims the session's
 * last IOU through OneToN before it expires. Pure: the chain's facts (the latest block, the sender's deposit, whether
 * a session was claimed) are passed in.
 */

export type SignedIou = Iou & { signature: Hex }

/** An IOU the service holds: the newest of its session, and what became of the session. */
export type StoredIou = {
  iou: SignedIou
  /**
   * held: the session's newest IOU, to claim; claiming: its claim is under way (no more IOUs of the session are taken:
   * a raise would be lost with it); claimed: OneToN paid it (by our claim or anyone's); expired: never claimed in time.
   */
  status: 'held' | 'claiming' | 'claimed' | 'expired'
  /** Unix milliseconds it was last raised. */
  updatedAt: number
  /** The sender planned a withdrawal of its deposit, or its balance went down: claim it now, if worth it, rather than near its end. */
  atRisk?: boolean
  /** Once claimed: what OneToN paid (the `Claimed` event's), the transaction and its block, when known. */
  claim?: { transferred?: bigint; transactionHash?: Hex; blockNumber?: bigint }
  /** Why it is as it is (a claim not worth its gas yet, a claim that failed). */
  note?: string
}

/** A new session's expiration must be at least this many blocks ahead: a week of 15-second blocks (raiden-services MIN_IOU_EXPIRY). */
export const MIN_IOU_EXPIRY_BLOCKS = 7n * 24n * 60n * 4n
/** The sender's deposit must cover twice what its IOU owes (raiden-services UDC_SECURITY_MARGIN_FACTOR_PFS): other services draw on it too. */
export const DEPOSIT_MARGIN_FACTOR = 2n

export type IouContext = {
  /** The curve engine the service's host chose: an IOU's signer is recovered with it. */
  curve: Secp256k1Engine
  /** The service's address: every IOU's receiver. */
  service: Address
  chainId: bigint
  oneToN: Address
  /** What a request costs; 0: requests are free and IOUs are ignored. */
  serviceFee: bigint
  /** The latest confirmed block. */
  latestBlock: bigint
  minExpiryBlocks?: bigint
}

/** What the service holds of this sender: its session taking IOUs (held), and whether the session the IOU names is claimed or being claimed. */
export type HeldIous = { active: StoredIou | undefined; sessionClaimed: boolean }

export type IouError = { name: PfsErrorName; message: string; details?: Record<string, unknown> }

export type IouCheck =
  /** Free: nothing to store. */
  | { ok: true; free: true }
  /** To store once the deposit is seen to cover `expected` (depositCovers). */
  | { ok: true; free: false; iou: SignedIou; expected: bigint }
  | { ok: false; error: IouError }

const refuse = (name: PfsErrorName, message: string, details?: Record<string, unknown>): IouCheck => ({
  ok: false,
  error: { name, message, ...(details ? { details } : {}) },
})

/** An IOU as raiden-services writes it in its answers (its IOU schema, without `claimed`) and Raiden's clients send it. */
export function iouJson(iou: SignedIou) {
  return {
    sender: iou.sender,
    receiver: iou.receiver,
    one_to_n_address: iou.oneToNAddress,
    amount: iou.amount,
    expiration_block: iou.expirationBlock,
    chain_id: iou.chainId,
    signature: iou.signature,
  }
}

/** Whether `iou`'s signature is its sender's over the 188 bytes OneToN checks. */
export function iouSignedBySender(curve: Secp256k1Engine, iou: SignedIou): boolean {
  try {
    return sameAddress(recoverPackedSignerSync(curve, packIou(iou), iou.signature), iou.sender)
  } catch {
    return false
  }
}

/**
 * The checks of an IOU that need no chain read, in raiden-services' order: addressed to this service, on its chain,
 * for its OneToN, signed by its sender; then against the sender's session: an IOU of another session while one is
 * open is `UseThisIOU` (with the one held), of a session claimed already `IOUAlreadyClaimed`, a new session must
 * expire far enough ahead, and the amount must be the session's last plus the fee.
 */
export function checkIou(iou: SignedIou | undefined, context: IouContext, held: HeldIous): IouCheck {
  if (context.serviceFee === 0n) return { ok: true, free: true }
  if (!iou) return refuse('MissingIOU', 'No IOU for service fees has been provided.')
  if (!sameAddress(iou.receiver, context.service))
    return refuse('WrongIOURecipient', 'IOU not addressed to the correct receiver.', { expected: context.service })
  if (iou.chainId !== context.chainId) return refuse('UnsupportedChainID', 'This service does not work on the given blockchain.', { expected: context.chainId })
  if (!sameAddress(iou.oneToNAddress, context.oneToN))
    return refuse('WrongOneToNAddress', 'The IOU uses a different OneToN contract than the service', { expected: context.oneToN, got: iou.oneToNAddress })
  if (!iouSignedBySender(context.curve, iou)) return refuse('InvalidSignature', 'The signature did not match the signed content.')

  let expected: bigint
  const active = held.active
  if (active) {
    if (active.iou.expirationBlock !== iou.expirationBlock)
      return refuse('UseThisIOU', 'Please increase the amount of the existing IOU instead of creating a new one.', { iou: iouJson(active.iou) })
    expected = active.iou.amount + context.serviceFee
  } else {
    if (held.sessionClaimed) return refuse('IOUAlreadyClaimed', 'The IOU is already claimed. Please start new session with different `expiration_block`.')
    const minExpiry = context.latestBlock + (context.minExpiryBlocks ?? MIN_IOU_EXPIRY_BLOCKS)
    if (iou.expirationBlock < minExpiry) return refuse('IOUExpiredTooEarly', 'Please use a higher `expiration_block`.', { min_expiry: minExpiry })
    expected = context.serviceFee
  }
  if (iou.amount < expected)
    return refuse('InsufficientServicePayment', 'The provided payment is lower than service fee.', { expected_amount: expected, actual_amount: iou.amount })
  return { ok: true, free: false, iou, expected }
}

/** Whether the sender's deposit (the lower of its effective balances at the latest and the confirmed block) covers `expected` with the margin. */
export function depositCovers(balance: bigint, expected: bigint): IouError | undefined {
  const required = expected * DEPOSIT_MARGIN_FACTOR
  if (balance >= required) return undefined
  return { name: 'DepositTooLow', message: 'Not enough deposit in UserDeposit contract.', details: { required_deposit: required, seen_deposit: balance } }
}

/** A session's key in the service's records: its sender (lower case), then its expiration block (64 hex digits, so keys sort by it). */
export function sessionKey(sender: Address, expirationBlock: bigint): string {
  return `${sender.toLowerCase()}!${expirationBlock.toString(16).padStart(64, '0')}`
}
