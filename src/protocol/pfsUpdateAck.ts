import { bytesToBigInt, hexToBytes } from 'viem'
import { keccak256Bytes } from './keccak.ts'
import { packMessage } from './messages/pack.ts'
import type { Delivered, PFSCapacityUpdate, PFSFeeUpdate, Signed } from './messages/types.ts'

/**
 * The id a pathfinding service acknowledges a PFSCapacityUpdate or PFSFeeUpdate with (docs/decisions/0072): they
 * carry no message_identifier, so, as for a RequestMonitoring (monitoringRequest.ts), the id is the first 8 bytes (a
 * uint64) of keccak256(the signed bytes || the 65-byte signature). It names one exact update; a resend of it gets the
 * same id, a newer update another.
 */
export function pfsUpdateAckId(update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>): bigint {
  const packed = packMessage(update)
  const signature = hexToBytes(update.signature)
  const both = new Uint8Array(packed.length + signature.length)
  both.set(packed, 0)
  both.set(signature, packed.length)
  return bytesToBigInt(keccak256Bytes(both).subarray(0, 8))
}

/** The acknowledgement of an update: the service's signed Delivered means it holds this update (or a newer one), on disk. */
export function pfsUpdateDelivered(update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>): Delivered {
  return { type: 'Delivered', delivered_message_identifier: pfsUpdateAckId(update) }
}
