import { concatHex, encodePacked, stringToHex, type Address, type Hex } from 'viem'
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

/**
 * The IOU a sender pays its next request with (Raiden's create_current_iou, pathfinding.py): its session's last IOU as
 * the service holds it, raised by the service's price (the expiration kept: a service takes no other in an open
 * session); or, without one, a new session of `price` that expires `timeout` blocks after `block`.
 */
export function nextIou(
  last: Iou | undefined,
  p: { sender: Address; receiver: Address; oneToN: Address; chainId: bigint; price: bigint; block: bigint; timeout: bigint },
): Iou {
  if (last) return { ...last, amount: last.amount + p.price }
  return { oneToNAddress: p.oneToN, chainId: p.chainId, sender: p.sender, receiver: p.receiver, amount: p.price, expirationBlock: p.block + p.timeout }
}

/**
 * Why an IOU a service says is our session's last cannot be raised, or undefined: it must be ours, to this service,
 * for our chain and OneToN (Raiden's update_iou checks its signature; a service that answers another's IOU, or one
 * for another contract, would have us sign a promise we never meant).
 */
export function whyNotOurIou(
  last: Iou,
  p: { sender: Address; receiver: Address; oneToN: Address; chainId: bigint; signer: Address | undefined },
): string | undefined {
  const same = (a: Address, b: Address) => a.toLowerCase() === b.toLowerCase()
  if (!p.signer || !same(p.signer, p.sender)) return 'it is not signed by this node'
  if (!same(last.sender, p.sender) || !same(last.receiver, p.receiver)) return 'it is not from this node to this service'
  if (last.chainId !== p.chainId) return `it is for chain ${last.chainId}`
  if (!same(last.oneToNAddress, p.oneToN)) return `it is for another OneToN contract (${last.oneToNAddress})`
  return undefined
}

/** The bytes a sender signs to ask a service for its last IOU (raiden-services' /payment/iou): sender || receiver || the timestamp's text. */
export function packIouQuery(sender: Address, receiver: Address, timestamp: string): Hex {
  return concatHex([sender, receiver, stringToHex(timestamp)])
}
