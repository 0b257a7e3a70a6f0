import type { Message, PFSCapacityUpdate, PFSFeeUpdate, RequestMonitoring, Signed } from '../protocol/messages/types.ts'
import { requestMonitoringAckId } from '../protocol/monitoringRequest.ts'
import { pfsUpdateAckId } from '../protocol/pfsUpdateAck.ts'

/**
 * The identifier acknowledgements refer to (docs/protocol.md §3.3, §3.5): every "retrievable" message and Processed
 * carry one. A RequestMonitoring carries none, but a monitoring service acknowledges one with a Delivered whose id
 * is derived from its signed bytes (`requestMonitoringAckId`, docs/decisions/0031): a node queues it signed
 * (docs/decisions/0035), so that id is its own, and it is resent until that Delivered comes. A signed PFSCapacityUpdate
 * or PFSFeeUpdate is acknowledged the same way by a pathfinding service (`pfsUpdateAckId`, docs/decisions/0072).
 * Delivered has none: nothing acknowledges it.
 */
export function retrievableId(message: Message): bigint | undefined {
  if ('message_identifier' in message) return message.message_identifier
  if (!('signature' in message)) return undefined
  if (message.type === 'RequestMonitoring') return requestMonitoringAckId(message as Signed<RequestMonitoring>)
  if (message.type === 'PFSCapacityUpdate' || message.type === 'PFSFeeUpdate')
    return pfsUpdateAckId(message as Signed<PFSCapacityUpdate> | Signed<PFSFeeUpdate>)
  return undefined
}

/**
 * Whether the sender keeps retrying this message until the receiver's state machine answers it (Processed, or
 * WithdrawConfirmation for a WithdrawRequest) rather than until the transport's Delivered: balance proofs and
 * withdraw messages. A receiver that once rejected one may accept its retry later (say, after seeing the channel
 * open on chain), so a resend of an unanswered one must reach the state machine again.
 */
export function awaitsStateAnswer(message: Message): boolean {
  switch (message.type) {
    case 'LockedTransfer':
    case 'RefundTransfer':
    case 'Unlock':
    case 'LockExpired':
    case 'WithdrawRequest':
    case 'WithdrawConfirmation':
    case 'WithdrawExpired':
      return true
    default:
      return false
  }
}
