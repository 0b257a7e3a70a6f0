import { encodePacked, type Address, type Hex } from 'viem'
import { MessageTypeId } from './messageTypeId.ts'

/** A promise to pay a pathfinding service from the sender's user deposit, claimable through OneToN. */
export type Iou = {
  oneToNAddress: Address
  chainId: bigint
  sender: Address
  receiver: Address
  amount: bigint
  expirationBlock: bigint
}

/** The 188 bytes the IOU's sender signs (docs/protocol.md §2.7). */
export function packIou(iou: Iou): Hex {
  return encodePacked(
    ['address', 'uint256', 'uint256', 'address', 'address', 'uint256', 'uint256'],
    [iou.oneToNAddress, iou.chainId, MessageTypeId.IOU, iou.sender, iou.receiver, iou.amount, iou.expirationBlock],
  )
}
