import { concatHex, encodePacked, type Address, type Hex } from 'viem'
import { keccak256Hex } from './keccak.ts'
import { PackedWriter } from './packedWriter.ts'
import { LOCKSROOT_OF_NO_LOCKS } from './locks.ts'
import { MessageTypeId } from './messageTypeId.ts'

export const ZERO_HASH: Hex = '0x0000000000000000000000000000000000000000000000000000000000000000'

/** What a balance proof commits to about the sender's side of a channel. */
export type BalanceData = {
  transferredAmount: bigint
  lockedAmount: bigint
  locksroot: Hex
}

/** Fields of a balance proof that are signed (docs/protocol.md §2.4). */
export type BalanceProof = BalanceData & {
  chainId: bigint
  tokenNetworkAddress: Address
  channelIdentifier: bigint
  nonce: bigint
  /** message_hash of the envelope message that carried this proof. */
  additionalHash: Hex
}

/**
 * keccak256(uint256 transferred || uint256 locked || bytes32 locksroot), except that the empty balance
 * (nothing transferred, nothing locked, no locks) hashes to 32 zero bytes, as both Raiden clients do.
 */
export function balanceHash({ transferredAmount, lockedAmount, locksroot }: BalanceData): Hex {
  if (transferredAmount === 0n && lockedAmount === 0n && (locksroot === LOCKSROOT_OF_NO_LOCKS || locksroot === ZERO_HASH)) return ZERO_HASH
  return keccak256Hex(new PackedWriter(96).uint(transferredAmount, 32).uint(lockedAmount, 32).fixed(locksroot, 32).done())
}

function packProof(type: bigint, bp: Omit<BalanceProof, keyof BalanceData> & { balanceHash: Hex }): Hex {
  return encodePacked(
    ['address', 'uint256', 'uint256', 'uint256', 'bytes32', 'uint256', 'bytes32'],
    [bp.tokenNetworkAddress, bp.chainId, type, bp.channelIdentifier, bp.balanceHash, bp.nonce, bp.additionalHash],
  )
}

export type PackedBalanceProofParameters = Omit<BalanceProof, keyof BalanceData> & { balanceHash: Hex }

/** The 212 bytes the sender of a transfer signs (docs/protocol.md §2.4). */
export function packBalanceProof(bp: PackedBalanceProofParameters): Hex {
  return packProof(MessageTypeId.BalanceProof, bp)
}

/**
 * The 277 bytes of a counter-signature (docs/protocol.md §2.5): the balance proof with type `BalanceProof` (to close)
 * or `BalanceProofUpdate` (to update as the non-closer), followed by the balance proof's own signature.
 */
export function packBalanceProofCounter(
  type: typeof MessageTypeId.BalanceProof | typeof MessageTypeId.BalanceProofUpdate,
  bp: PackedBalanceProofParameters,
  balanceProofSignature: Hex,
): Hex {
  return concatHex([packProof(type, bp), balanceProofSignature])
}
