/** The type tag (a uint256 in signed data) that keeps one kind of signed message from passing for another. */
export const MessageTypeId = {
  BalanceProof: 1n,
  BalanceProofUpdate: 2n,
  Withdraw: 3n,
  CooperativeSettle: 4n,
  IOU: 5n,
  MSReward: 6n,
} as const

export type MessageTypeId = (typeof MessageTypeId)[keyof typeof MessageTypeId]
