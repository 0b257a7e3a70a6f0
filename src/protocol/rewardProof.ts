import { encodePacked, keccak256, type Address, type Hex } from 'viem'
import { MessageTypeId } from './messageTypeId.ts'

/** What a node signs to pay a monitoring service for updating its channel on its behalf. */
export type RewardProof = {
  monitoringServiceAddress: Address
  chainId: bigint
  tokenNetworkAddress: Address
  nonClosingParticipant: Address
  /** The non-closer's 65-byte counter-signature (type BalanceProofUpdate) of the closer's balance proof. */
  nonClosingSignature: Hex
  rewardAmount: bigint
}

/** The 221 bytes of a monitoring reward proof (docs/protocol.md §2.8). */
export function packRewardProof(p: RewardProof): Hex {
  return encodePacked(
    ['address', 'uint256', 'uint256', 'address', 'address', 'bytes', 'uint256'],
    [p.monitoringServiceAddress, p.chainId, MessageTypeId.MSReward, p.tokenNetworkAddress, p.nonClosingParticipant, p.nonClosingSignature, p.rewardAmount],
  )
}

/** Where MonitoringService keeps the reward of a channel: keccak256(uint256 channel id || token network) (docs/protocol.md §2.9). */
export function rewardIdentifier(channelIdentifier: bigint, tokenNetworkAddress: Address): Hex {
  return keccak256(encodePacked(['uint256', 'address'], [channelIdentifier, tokenNetworkAddress]))
}
