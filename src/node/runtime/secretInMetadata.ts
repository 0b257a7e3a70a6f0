import { hexToBytes, type Address, type Hex } from 'viem'
import type { Message, Signed } from '../../protocol/messages/types.ts'
import { decryptSecret, encryptSecret } from '../../protocol/secretCipher.ts'
import type { Secp256k1Engine } from '../../protocol/secp256k1.ts'
import type { DecryptedSecret } from '../../protocol/state/changes.ts'

/**
 * The payment secret in a LockedTransfer's metadata, encrypted to the target (docs/decisions/0003): the shell's
 * half, since it holds the keys and the randomness. The core checks what was decrypted against the lock.
 */

/** The secret the initiator encrypted to us (`address`) in a LockedTransfer's metadata, if one opens with our key. */
export function secretFromMetadata(curve: Secp256k1Engine, message: Signed<Message>, address: Address, privateKey: Uint8Array): DecryptedSecret | undefined {
  if (message.type !== 'LockedTransfer' || typeof message.metadata.secret !== 'string') return undefined
  if (message.target.toLowerCase() !== address.toLowerCase()) return undefined
  return decryptSecret(curve, message.metadata.secret, privateKey)
}

export type SecretForTargetParameters = {
  /** The node's curve engine. */
  curve: Secp256k1Engine
  /** `false` turns the secret in metadata off (for peers that mishandle the extra field). */
  enabled: boolean
  /** The target's public key (64 bytes, x || y), when a signed message of it was received. */
  targetPublicKey: Hex | undefined
  secret: Hex | undefined
  amount: bigint
  paymentId: bigint
  random?: (bytes: number) => Uint8Array
}

/** `secret` encrypted to the target for the LockedTransfer's metadata, or undefined (the target then asks for it). */
export function secretForTarget({
  curve,
  enabled,
  targetPublicKey,
  secret,
  amount,
  paymentId,
  random = (n) => crypto.getRandomValues(new Uint8Array(n)),
}: SecretForTargetParameters): Hex | undefined {
  if (!enabled || !secret || !targetPublicKey) return undefined
  try {
    return encryptSecret(curve, {
      payload: { secret, amount, paymentId },
      targetPublicKey: hexToBytes(targetPublicKey),
      ephemeralPrivateKey: random(32),
      nonce: random(16),
    })
  } catch {
    return undefined // an ephemeral key out of range (about 2^-128): the target asks for the secret instead
  }
}
