// IOUs signed as a Raiden node or a Sluice node signs them (raiden/network/pathfinding.py `IOU.sign`: EIP-191 over the
// 188 bytes OneToN checks). No vitest imports.
import type { Address, Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { packIou, type Iou } from '../../src/protocol/iou.ts'
import { signPackedSync } from '../../src/protocol/signature.ts'
import type { SignedIou } from '../../src/pathfinding/iou.ts'
import { nativeCurve } from './curve.ts'

export function signIou(key: Hex, iou: Omit<Iou, 'sender'> & { sender?: Address }): SignedIou {
  const full: Iou = { ...iou, sender: iou.sender ?? privateKeyToAddress(key) }
  return { ...full, signature: signPackedSync(nativeCurve, key, packIou(full)) }
}

/** An IOU as Raiden's clients put it in a routes request (IOU.as_json), numbers as JSON integers. */
export { iouJson } from '../../src/pathfinding/iou.ts'
