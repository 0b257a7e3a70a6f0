import type { Delivered, PFSCapacityUpdate, PFSFeeUpdate, Signed } from './messages/types.ts'
import { serviceAckId } from './serviceAckId.ts'

/**
 * The id a pathfinding service acknowledges a PFSCapacityUpdate or PFSFeeUpdate with (docs/decisions/0072), derived as
 * a RequestMonitoring's is (serviceAckId.ts): it names one exact update; a resend of it gets the same id, a newer
 * update another.
 */
export function pfsUpdateAckId(update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>): bigint {
  return serviceAckId(update)
}

/** The acknowledgement of an update: the service's signed Delivered means it holds this update (or a newer one), on disk. */
export function pfsUpdateDelivered(update: Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>): Delivered {
  return { type: 'Delivered', delivered_message_identifier: pfsUpdateAckId(update) }
}
