import type { Address, Hex } from 'viem'
import type {
  Message,
  PFSCapacityUpdate,
  Processed,
  SecretRequest,
  Unlock,
  WithdrawConfirmation,
  WithdrawRequest,
} from '../../../src/protocol/messages/types.ts'
import type { OutboxRecord } from '../../../src/storage/storage.ts'

/** Small valid messages for delivery tests (no Node-only imports: the browser worker fixture uses them too). */
export const TOKEN_NETWORK: Address = '0x5FbDB2315678afecb367f032d93F642f64180aa3'
const HASH: Hex = `0x${'11'.repeat(32)}`

export const channelKeyOf = (channelId: bigint) => `${TOKEN_NETWORK.toLowerCase()}:${channelId}`

export function unlock(id: bigint, nonce: bigint, channelId = 7n): Unlock {
  return {
    type: 'Unlock',
    message_identifier: id,
    chain_id: 31337n,
    token_network_address: TOKEN_NETWORK,
    channel_identifier: channelId,
    nonce,
    transferred_amount: 10n * nonce,
    locked_amount: 0n,
    locksroot: HASH,
    payment_identifier: 1n,
    secret: HASH,
  }
}

export function secretRequest(id: bigint): SecretRequest {
  return { type: 'SecretRequest', message_identifier: id, payment_identifier: 1n, secrethash: HASH, amount: 5n, expiration: 100n }
}

export function withdrawRequest(id: bigint, nonce: bigint, participant: Address, channelId = 7n): WithdrawRequest {
  return {
    type: 'WithdrawRequest',
    message_identifier: id,
    chain_id: 31337n,
    token_network_address: TOKEN_NETWORK,
    channel_identifier: channelId,
    participant,
    total_withdraw: 3n,
    nonce,
    expiration: 50n,
    coop_settle: false,
  }
}

export function withdrawConfirmation(request: WithdrawRequest, nonce: bigint): WithdrawConfirmation {
  const { coop_settle: _, ...fields } = request
  return { ...fields, type: 'WithdrawConfirmation', nonce }
}

export const processed = (id: bigint): Processed => ({ type: 'Processed', message_identifier: id })

export function capacityUpdate(updating: Address, other: Address): PFSCapacityUpdate {
  return {
    type: 'PFSCapacityUpdate',
    canonical_identifier: { chain_identifier: 31337n, token_network_address: TOKEN_NETWORK, channel_identifier: 7n },
    updating_participant: updating,
    other_participant: other,
    updating_nonce: 1n,
    other_nonce: 0n,
    updating_capacity: 10n,
    other_capacity: 0n,
    reveal_timeout: 50n,
  }
}

/** An outbox record as the runtime commits it: ordered queue for balance proofs and withdraw messages. */
export function record(recipient: Address, message: Message, channelKey?: string): OutboxRecord {
  const id = 'message_identifier' in message ? message.message_identifier : 'none'
  return {
    key: `${recipient.toLowerCase()}|${message.type}|${id}`,
    recipient,
    message,
    ...(channelKey === undefined ? {} : { channelKey }),
    queuedAt: 0,
    attempts: 0,
    nextAttemptAt: 0,
  }
}

/** What the state machine would answer (docs/protocol.md §3.5): Processed for proofs, a confirmation for a request. */
export function answerOf(message: Message, sender: Address, ourNonce: bigint): OutboxRecord | undefined {
  switch (message.type) {
    case 'LockedTransfer':
    case 'RefundTransfer':
    case 'Unlock':
    case 'LockExpired':
    case 'WithdrawConfirmation':
    case 'WithdrawExpired':
      return record(sender, processed(message.message_identifier))
    case 'WithdrawRequest':
      return record(sender, withdrawConfirmation(message, ourNonce), channelKeyOf(message.channel_identifier))
    default:
      return undefined
  }
}
