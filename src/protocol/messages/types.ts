import type { Address, Hex } from 'viem'

/**
 * The Raiden off-chain messages (docs/protocol.md §3.3), as plain data with the wire field names. Integers are
 * bigint here and decimal strings on the wire; addresses are EIP-55 checksummed once decoded.
 */

export type WireLock = { amount: bigint; expiration: bigint; secrethash: Hex }

/**
 * A node's presence record under Raiden's names, as a pathfinding service answers it for each node of a route and an
 * initiator hands it on in `metadata.routes[].address_metadata` (docs/decisions/0072, 0073): `user_id` its libp2p
 * peer id, `displayname` the record's signature, `capabilities` the signed announcement (where to dial it). A
 * receiver checks it before using it.
 */
export type AddressMetadata = { user_id: string; displayname: string; capabilities: string }

/** Route metadata of a LockedTransfer. Kept as received: mediators must forward it unchanged (docs/protocol.md §3.4). */
export type Metadata = { routes: { route: Address[]; address_metadata?: Record<string, unknown> }[]; secret?: Hex } & Record<string, unknown>

export type Processed = { type: 'Processed'; message_identifier: bigint }
export type Delivered = { type: 'Delivered'; delivered_message_identifier: bigint }

export type SecretRequest = {
  type: 'SecretRequest'
  message_identifier: bigint
  payment_identifier: bigint
  secrethash: Hex
  amount: bigint
  expiration: bigint
}

export type RevealSecret = { type: 'RevealSecret'; message_identifier: bigint; secret: Hex }

/** The fields every balance-proof carrying ("envelope") message has. */
export type EnvelopeFields = {
  message_identifier: bigint
  chain_id: bigint
  token_network_address: Address
  channel_identifier: bigint
  nonce: bigint
  transferred_amount: bigint
  locked_amount: bigint
  locksroot: Hex
}

type TransferFields = EnvelopeFields & {
  payment_identifier: bigint
  token: Address
  recipient: Address
  lock: WireLock
  target: Address
  initiator: Address
  metadata: Metadata
}

export type LockedTransfer = { type: 'LockedTransfer' } & TransferFields
export type RefundTransfer = { type: 'RefundTransfer' } & TransferFields
export type Unlock = { type: 'Unlock' } & EnvelopeFields & { payment_identifier: bigint; secret: Hex }
export type LockExpired = { type: 'LockExpired' } & EnvelopeFields & { recipient: Address; secrethash: Hex }

type WithdrawFields = {
  message_identifier: bigint
  chain_id: bigint
  token_network_address: Address
  channel_identifier: bigint
  participant: Address
  total_withdraw: bigint
  nonce: bigint
  expiration: bigint
}

export type WithdrawRequest = { type: 'WithdrawRequest'; coop_settle?: boolean } & WithdrawFields
export type WithdrawConfirmation = { type: 'WithdrawConfirmation' } & WithdrawFields
export type WithdrawExpired = { type: 'WithdrawExpired' } & WithdrawFields

export type CanonicalIdentifier = { chain_identifier: bigint; token_network_address: Address; channel_identifier: bigint }

export type PFSCapacityUpdate = {
  type: 'PFSCapacityUpdate'
  canonical_identifier: CanonicalIdentifier
  updating_participant: Address
  other_participant: Address
  updating_nonce: bigint
  other_nonce: bigint
  updating_capacity: bigint
  other_capacity: bigint
  reveal_timeout: bigint
}

export type FeeSchedule = {
  cap_fees: boolean
  flat: bigint
  /** Parts per million. */
  proportional: bigint
  imbalance_penalty: [bigint, bigint][] | null
}

export type PFSFeeUpdate = {
  type: 'PFSFeeUpdate'
  canonical_identifier: CanonicalIdentifier
  updating_participant: Address
  fee_schedule: FeeSchedule
  /** Naive ISO-8601 in UTC, `YYYY-MM-DDTHH:MM:SS.ffffff`. */
  timestamp: string
}

export type SignedBalanceProof = {
  chain_id: bigint
  token_network_address: Address
  channel_identifier: bigint
  nonce: bigint
  balance_hash: Hex
  additional_hash: Hex
  signature: Hex
}

export type RequestMonitoring = {
  type: 'RequestMonitoring'
  balance_proof: SignedBalanceProof
  monitoring_service_contract_address: Address
  non_closing_participant: Address
  non_closing_signature: Hex
  reward_amount: bigint
}

/**
 * A balance proof as evidence (docs/decisions/0034): what its signer committed to (docs/protocol.md §2.4: the balance
 * data, the nonce and the additional_hash) and the signer's signature over those 212 bytes, the very signature the
 * message that carried it had. In the sender's own proof of a ChannelSync the shell fills the signature when it signs
 * the message (the same bytes it signed before, so the same signature: RFC 6979).
 */
export type SyncBalanceProof = {
  nonce: bigint
  transferred_amount: bigint
  locked_amount: bigint
  locksroot: Hex
  additional_hash: Hex
  signature?: Hex
}

/** A node restored from a copy asks its partner for the latest state of their channel before it signs on it again. */
export type ChannelSyncRequest = {
  type: 'ChannelSyncRequest'
  message_identifier: bigint
  chain_id: bigint
  token_network_address: Address
  channel_identifier: bigint
}

/**
 * The partner's answer to a ChannelSyncRequest: the requester's end as the sender holds it (the last nonce of the
 * requester's it applied, the requester's latest balance proof with the requester's own signature and the locks
 * pending in it) and the sender's own end (its last nonce, its latest balance proof to the requester, signed, and
 * its locks).
 */
export type ChannelSync = {
  type: 'ChannelSync'
  message_identifier: bigint
  chain_id: bigint
  token_network_address: Address
  channel_identifier: bigint
  requester_nonce: bigint
  requester_balance_proof: SyncBalanceProof | null
  requester_locks: WireLock[]
  sender_nonce: bigint
  sender_balance_proof: SyncBalanceProof | null
  sender_locks: WireLock[]
}

export type Message =
  | Processed
  | Delivered
  | SecretRequest
  | RevealSecret
  | LockedTransfer
  | RefundTransfer
  | Unlock
  | LockExpired
  | WithdrawRequest
  | WithdrawConfirmation
  | WithdrawExpired
  | PFSCapacityUpdate
  | PFSFeeUpdate
  | RequestMonitoring
  | ChannelSyncRequest
  | ChannelSync

export type MessageType = Message['type']
export type EnvelopeMessage = LockedTransfer | RefundTransfer | Unlock | LockExpired

export type Signed<M extends Message> = M & { signature: Hex }
