import { InvalidMessageError } from '../errors.ts'
import { address, bool, bytes, object, timestamp, uint, type Json } from './fields.ts'
import type { CanonicalIdentifier, EnvelopeFields, FeeSchedule, Message, Metadata, Signed, SyncBalanceProof, WireLock } from './types.ts'

/** JSON value of a message for the wire: bigints as decimal strings, everything else as it is. */
export function toWire(message: Message | Signed<Message>): Json {
  return JSON.parse(JSON.stringify(message, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))) as Json
}

/** The wire text of a message: one line of JSON. */
export function encodeMessage(message: Signed<Message>): string {
  return JSON.stringify(message, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))
}

/** The most a LockedTransfer's metadata may hold (its JSON's length): a receiver refuses more. */
export const MAX_METADATA_BYTES = 16_384

function lock(value: unknown): WireLock {
  const o = object(value, 'lock')
  return {
    amount: uint(o.amount, 'lock.amount', 256),
    expiration: uint(o.expiration, 'lock.expiration', 256),
    secrethash: bytes(o.secrethash, 'lock.secrethash', 32),
  }
}

/** Checks the route shape and keeps the object exactly as received, so its hash stays the signed one. */
function metadata(value: unknown): Metadata {
  const o = object(value, 'metadata')
  if (!Array.isArray(o.routes)) throw new InvalidMessageError('metadata.routes', 'expected a list of routes')
  o.routes.forEach((r, i) => {
    const route = object(r, `metadata.routes[${i}]`)
    if (!Array.isArray(route.route)) throw new InvalidMessageError(`metadata.routes[${i}].route`, 'expected a list of addresses')
    for (const [j, a] of route.route.entries()) address(a, `metadata.routes[${i}].route[${j}]`)
  })
  if (o.secret !== undefined && (typeof o.secret !== 'string' || !/^0x[0-9a-fA-F]*$/.test(o.secret)))
    throw new InvalidMessageError('metadata.secret', 'expected 0x-hex')
  if (JSON.stringify(o).length > MAX_METADATA_BYTES) throw new InvalidMessageError('metadata', `larger than ${MAX_METADATA_BYTES} bytes`)
  return o as Metadata
}

function envelope(o: Json): EnvelopeFields {
  return {
    message_identifier: uint(o.message_identifier, 'message_identifier', 64),
    chain_id: uint(o.chain_id, 'chain_id', 256),
    token_network_address: address(o.token_network_address, 'token_network_address'),
    channel_identifier: uint(o.channel_identifier, 'channel_identifier', 256),
    nonce: uint(o.nonce, 'nonce', 64),
    transferred_amount: uint(o.transferred_amount, 'transferred_amount', 256),
    locked_amount: uint(o.locked_amount, 'locked_amount', 256),
    locksroot: bytes(o.locksroot, 'locksroot', 32),
  }
}

function withdraw(o: Json) {
  return {
    message_identifier: uint(o.message_identifier, 'message_identifier', 64),
    chain_id: uint(o.chain_id, 'chain_id', 256),
    token_network_address: address(o.token_network_address, 'token_network_address'),
    channel_identifier: uint(o.channel_identifier, 'channel_identifier', 256),
    participant: address(o.participant, 'participant'),
    total_withdraw: uint(o.total_withdraw, 'total_withdraw', 256),
    nonce: uint(o.nonce, 'nonce', 64),
    expiration: uint(o.expiration, 'expiration', 256),
  }
}

function canonicalIdentifier(value: unknown): CanonicalIdentifier {
  const o = object(value, 'canonical_identifier')
  return {
    chain_identifier: uint(o.chain_identifier, 'canonical_identifier.chain_identifier', 256),
    token_network_address: address(o.token_network_address, 'canonical_identifier.token_network_address'),
    channel_identifier: uint(o.channel_identifier, 'canonical_identifier.channel_identifier', 256),
  }
}

function feeSchedule(value: unknown): FeeSchedule {
  const o = object(value, 'fee_schedule')
  let penalty: FeeSchedule['imbalance_penalty'] = null
  if (o.imbalance_penalty !== null && o.imbalance_penalty !== undefined) {
    if (!Array.isArray(o.imbalance_penalty) || o.imbalance_penalty.length > 1000)
      throw new InvalidMessageError('fee_schedule.imbalance_penalty', 'expected null or a list of [x, y] pairs')
    penalty = o.imbalance_penalty.map((p, i) => {
      if (!Array.isArray(p) || p.length !== 2) throw new InvalidMessageError(`fee_schedule.imbalance_penalty[${i}]`, 'expected an [x, y] pair')
      return [uint(p[0], `fee_schedule.imbalance_penalty[${i}][0]`, 256), uint(p[1], `fee_schedule.imbalance_penalty[${i}][1]`, 256)]
    })
  }
  return {
    cap_fees: bool(o.cap_fees, 'fee_schedule.cap_fees'),
    flat: uint(o.flat, 'fee_schedule.flat', 256),
    proportional: uint(o.proportional, 'fee_schedule.proportional', 256),
    imbalance_penalty: penalty,
  }
}

/** At most this many locks per side of a ChannelSync: a channel end holds at most maxPendingLocks (160 by default). */
const MAX_SYNC_LOCKS = 256

function syncLocks(value: unknown, name: string): WireLock[] {
  if (!Array.isArray(value) || value.length > MAX_SYNC_LOCKS) throw new InvalidMessageError(name, `expected a list of at most ${MAX_SYNC_LOCKS} locks`)
  return value.map((l) => lock(l))
}

function syncProof(value: unknown, name: string): SyncBalanceProof | null {
  if (value === null) return null
  const o = object(value, name)
  return {
    nonce: uint(o.nonce, `${name}.nonce`, 64),
    transferred_amount: uint(o.transferred_amount, `${name}.transferred_amount`, 256),
    locked_amount: uint(o.locked_amount, `${name}.locked_amount`, 256),
    locksroot: bytes(o.locksroot, `${name}.locksroot`, 32),
    additional_hash: bytes(o.additional_hash, `${name}.additional_hash`, 32),
    signature: bytes(o.signature, `${name}.signature`, 65),
  }
}

function channelFields(o: Json) {
  return {
    message_identifier: uint(o.message_identifier, 'message_identifier', 64),
    chain_id: uint(o.chain_id, 'chain_id', 256),
    token_network_address: address(o.token_network_address, 'token_network_address'),
    channel_identifier: uint(o.channel_identifier, 'channel_identifier', 256),
  }
}

/** Reads the fields of one message, by its `type`, from a parsed JSON value. The signature is not checked here. */
export function readMessage(value: unknown): Signed<Message> {
  const o = object(value, 'message')
  const signature = bytes(o.signature, 'signature', 65)
  switch (o.type) {
    case 'Processed':
      return { type: o.type, message_identifier: uint(o.message_identifier, 'message_identifier', 64), signature }
    case 'Delivered':
      return { type: o.type, delivered_message_identifier: uint(o.delivered_message_identifier, 'delivered_message_identifier', 64), signature }
    case 'SecretRequest':
      return {
        type: o.type,
        message_identifier: uint(o.message_identifier, 'message_identifier', 64),
        payment_identifier: uint(o.payment_identifier, 'payment_identifier', 64),
        secrethash: bytes(o.secrethash, 'secrethash', 32),
        amount: uint(o.amount, 'amount', 256),
        expiration: uint(o.expiration, 'expiration', 256),
        signature,
      }
    case 'RevealSecret':
      return { type: o.type, message_identifier: uint(o.message_identifier, 'message_identifier', 64), secret: bytes(o.secret, 'secret', 32), signature }
    case 'LockedTransfer':
    case 'RefundTransfer':
      return {
        type: o.type,
        ...envelope(o),
        payment_identifier: uint(o.payment_identifier, 'payment_identifier', 64),
        token: address(o.token, 'token'),
        recipient: address(o.recipient, 'recipient'),
        lock: lock(o.lock),
        target: address(o.target, 'target'),
        initiator: address(o.initiator, 'initiator'),
        metadata: metadata(o.metadata),
        signature,
      }
    case 'Unlock':
      return {
        type: o.type,
        ...envelope(o),
        payment_identifier: uint(o.payment_identifier, 'payment_identifier', 64),
        secret: bytes(o.secret, 'secret', 32),
        signature,
      }
    case 'LockExpired':
      return { type: o.type, ...envelope(o), recipient: address(o.recipient, 'recipient'), secrethash: bytes(o.secrethash, 'secrethash', 32), signature }
    case 'WithdrawRequest':
      return {
        type: o.type,
        ...withdraw(o),
        ...(o.coop_settle === undefined || o.coop_settle === null ? {} : { coop_settle: bool(o.coop_settle, 'coop_settle') }),
        signature,
      }
    case 'WithdrawConfirmation':
    case 'WithdrawExpired':
      return { type: o.type, ...withdraw(o), signature }
    case 'PFSCapacityUpdate':
      return {
        type: o.type,
        canonical_identifier: canonicalIdentifier(o.canonical_identifier),
        updating_participant: address(o.updating_participant, 'updating_participant'),
        other_participant: address(o.other_participant, 'other_participant'),
        updating_nonce: uint(o.updating_nonce, 'updating_nonce', 64),
        other_nonce: uint(o.other_nonce, 'other_nonce', 64),
        updating_capacity: uint(o.updating_capacity, 'updating_capacity', 256),
        other_capacity: uint(o.other_capacity, 'other_capacity', 256),
        reveal_timeout: uint(o.reveal_timeout, 'reveal_timeout', 256),
        signature,
      }
    case 'PFSFeeUpdate':
      return {
        type: o.type,
        canonical_identifier: canonicalIdentifier(o.canonical_identifier),
        updating_participant: address(o.updating_participant, 'updating_participant'),
        fee_schedule: feeSchedule(o.fee_schedule),
        timestamp: timestamp(o.timestamp, 'timestamp'),
        signature,
      }
    case 'RequestMonitoring': {
      const bp = object(o.balance_proof, 'balance_proof')
      return {
        type: o.type,
        balance_proof: {
          chain_id: uint(bp.chain_id, 'balance_proof.chain_id', 256),
          token_network_address: address(bp.token_network_address, 'balance_proof.token_network_address'),
          channel_identifier: uint(bp.channel_identifier, 'balance_proof.channel_identifier', 256),
          nonce: uint(bp.nonce, 'balance_proof.nonce', 256),
          balance_hash: bytes(bp.balance_hash, 'balance_proof.balance_hash', 32),
          additional_hash: bytes(bp.additional_hash, 'balance_proof.additional_hash', 32),
          signature: bytes(bp.signature, 'balance_proof.signature', 65),
        },
        monitoring_service_contract_address: address(o.monitoring_service_contract_address, 'monitoring_service_contract_address'),
        non_closing_participant: address(o.non_closing_participant, 'non_closing_participant'),
        non_closing_signature: bytes(o.non_closing_signature, 'non_closing_signature', 65),
        reward_amount: uint(o.reward_amount, 'reward_amount', 256),
        signature,
      }
    }
    case 'ChannelSyncRequest':
      return { type: o.type, ...channelFields(o), signature }
    case 'ChannelSync':
      return {
        type: o.type,
        ...channelFields(o),
        requester_nonce: uint(o.requester_nonce, 'requester_nonce', 64),
        requester_balance_proof: syncProof(o.requester_balance_proof, 'requester_balance_proof'),
        requester_locks: syncLocks(o.requester_locks, 'requester_locks'),
        sender_nonce: uint(o.sender_nonce, 'sender_nonce', 64),
        sender_balance_proof: syncProof(o.sender_balance_proof, 'sender_balance_proof'),
        sender_locks: syncLocks(o.sender_locks, 'sender_locks'),
        signature,
      }
    default:
      throw new InvalidMessageError('type', `unknown message type ${JSON.stringify(o.type)}`)
  }
}

/** Parses one line of wire text into a message (fields checked, signature not yet). */
export function parseMessage(text: string): Signed<Message> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new InvalidMessageError('message', 'not JSON')
  }
  return readMessage(value)
}
