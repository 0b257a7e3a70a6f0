import type { Hex } from 'viem'
import { keccak256Hex as keccak256 } from '../keccak.ts'
import { PackedWriter } from '../packedWriter.ts'
import { CmdId } from './cmdid.ts'
import { metadataHash } from './metadata.ts'
import type { EnvelopeMessage } from './types.ts'

/**
 * Hashes already computed, by message object: a received message's hash is needed to recover its signer, to check
 * its proof and to keep its signed bytes, and a LockedTransfer's (its metadata hashed too) costs tens of
 * microseconds. A memo of a pure function over an object that is never changed; it decides nothing.
 */
const hashes = new WeakMap<EnvelopeMessage, Hex>()

/**
 * The additional_hash an envelope message's balance proof commits to (docs/protocol.md §3.4): keccak256 of the
 * message fields that are not in the balance proof itself. The cmdid is one byte here, with no padding.
 */
export function messageHash(message: EnvelopeMessage): Hex {
  let hash = hashes.get(message)
  if (hash === undefined) {
    hash = computeMessageHash(message)
    hashes.set(message, hash)
  }
  return hash
}

function computeMessageHash(message: EnvelopeMessage): Hex {
  switch (message.type) {
    case 'LockedTransfer':
    case 'RefundTransfer': {
      const withMetadata = message.type === 'LockedTransfer'
      const w = new PackedWriter(withMetadata ? 225 : 193)
        .uint(BigInt(CmdId[message.type]), 1)
        .uint(message.message_identifier, 8)
        .uint(message.payment_identifier, 8)
        .uint(message.lock.expiration, 32)
        .fixed(message.token, 20)
        .fixed(message.recipient, 20)
        .fixed(message.target, 20)
        .fixed(message.initiator, 20)
        .fixed(message.lock.secrethash, 32)
        .uint(message.lock.amount, 32)
      if (withMetadata) w.fixed(metadataHash(message.metadata), 32)
      return keccak256(w.done())
    }
    case 'Unlock':
      return keccak256(
        new PackedWriter(49)
          .uint(BigInt(CmdId.Unlock), 1)
          .uint(message.message_identifier, 8)
          .uint(message.payment_identifier, 8)
          .fixed(message.secret, 32)
          .done(),
      )
    case 'LockExpired':
      return keccak256(
        new PackedWriter(61)
          .uint(BigInt(CmdId.LockExpired), 1)
          .uint(message.message_identifier, 8)
          .fixed(message.recipient, 20)
          .fixed(message.secrethash, 32)
          .done(),
      )
  }
}
