import { bytesToBigInt, hexToBytes } from 'viem'
import { keccak256Bytes } from './keccak.ts'
import { packMessage } from './messages/pack.ts'
import type { PFSCapacityUpdate, PFSFeeUpdate, RequestMonitoring, Signed } from './messages/types.ts'

/**
 * The id a service acknowledges a message to it with (a RequestMonitoring, docs/decisions/0031; a PFSCapacityUpdate
 * or PFSFeeUpdate, 0072): they carry no message_identifier, so the id is derived from what was signed, the first 8
 * bytes (a uint64) of keccak256(the signed bytes || the 65-byte signature). It names one exact message; a resend of
 * it gets the same id, any other message another.
 */
export function serviceAckId(message: Signed<RequestMonitoring> | Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>): bigint {
  const packed = packMessage(message)
  const signature = hexToBytes(message.signature)
  const both = new Uint8Array(packed.length + signature.length)
  both.set(packed, 0)
  both.set(signature, packed.length)
  return bytesToBigInt(keccak256Bytes(both).subarray(0, 8))
}
