import type { Message } from '../protocol/messages/types.ts'

/**
 * The identifier acknowledgements refer to (docs/protocol.md §3.3, §3.5): every "retrievable" message and Processed
 * carry one; Delivered and the service messages (PFS updates, RequestMonitoring) do not, so nothing acknowledges
 * them and they are sent once.
 */
export function retrievableId(message: Message): bigint | undefined {
  return 'message_identifier' in message ? message.message_identifier : undefined
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
