import { encodePacked, type Address, type Hex } from 'viem'
import { MessageTypeId } from './messageTypeId.ts'

export type WithdrawData = {
  tokenNetworkAddress: Address
  chainId: bigint
  channelIdentifier: bigint
  participant: Address
  totalWithdraw: bigint
  expiration: bigint
}

/** The 200 bytes both channel participants sign to authorise a withdraw (docs/protocol.md §2.6). */
export function packWithdraw(w: WithdrawData): Hex {
  return encodePacked(
    ['address', 'uint256', 'uint256', 'uint256', 'address', 'uint256', 'uint256'],
    [w.tokenNetworkAddress, w.chainId, MessageTypeId.Withdraw, w.channelIdentifier, w.participant, w.totalWithdraw, w.expiration],
  )
}
