import type { Address } from 'viem'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'
import { recoverPackedSignerSync, signPackedSync } from '../protocol/signature.ts'
import { BackupBadSignatureError, BackupMalformedError, BackupOtherOwnerError, BackupTamperedError } from './errors.ts'
import { copyAdditionalData, FORMAT, IV_BYTES, MAX_VERSION, signedCopyBytes, type Envelope } from './format.ts'
import type { BackupKey } from './key.ts'

/**
 * Sealing and opening a copy (docs/decisions/0032-off-browser-backup.md): AES-256-GCM under the owner's backup key
 * with the address and version as additional data, then the owner's EIP-191 signature over the address, the
 * version and keccak256 of the ciphertext. `verifyEnvelope` is what a server can check: who owns the copy, and
 * that nothing of it changed since, learning nothing of the payload.
 */

export type SealParameters = {
  /** Above every version this owner sealed before: the server keeps the highest and refuses lower ones. */
  version: bigint
  /** The bytes to keep: whatever the node side chooses. */
  payload: Uint8Array
  /** 12 fresh random bytes (the default draws them); given only by tests that need a fixed ciphertext. */
  iv?: Uint8Array
}

export async function seal(key: BackupKey, { version, payload, iv = crypto.getRandomValues(new Uint8Array(IV_BYTES)) }: SealParameters): Promise<Envelope> {
  if (version < 1n || version > MAX_VERSION) throw new BackupMalformedError(`a copy's version must be from 1 to ${MAX_VERSION}, got ${version}`)
  if (iv.length !== IV_BYTES) throw new BackupMalformedError(`the IV must be ${IV_BYTES} bytes`)
  const additionalData = new Uint8Array(copyAdditionalData(key.address, version))
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-GCM', iv: new Uint8Array(iv), additionalData, tagLength: 128 }, key.cipherKey, new Uint8Array(payload)),
  )
  const ciphertext = new Uint8Array(IV_BYTES + sealed.length)
  ciphertext.set(iv, 0)
  ciphertext.set(sealed, IV_BYTES)
  const signature = signPackedSync(key.curve, key.privateKey, signedCopyBytes(key.address, version, ciphertext))
  return { format: FORMAT, address: key.address, version, ciphertext, signature }
}

/** The address whose key signed `envelope` as it is; throws BACKUP_BAD_SIGNATURE when that is not `envelope.address`. */
export function verifyEnvelope(curve: Secp256k1Engine, envelope: Envelope): Address {
  let signer: Address | undefined
  try {
    signer = recoverPackedSignerSync(curve, signedCopyBytes(envelope.address, envelope.version, envelope.ciphertext), envelope.signature)
  } catch {
    signer = undefined
  }
  if (signer !== envelope.address)
    throw new BackupBadSignatureError(`the copy is not signed by ${envelope.address}: forged, or changed since its owner signed it`)
  return signer
}

export type Opened = { version: bigint; payload: Uint8Array }

/**
 * The payload of a copy of `key`'s owner. Refuses a copy of another address (BACKUP_OTHER_OWNER), one whose
 * signature is not the owner's over what it holds (BACKUP_BAD_SIGNATURE), and one that does not decrypt as this
 * address's copy at this version (BACKUP_TAMPERED). The caller compares the version with what it has.
 */
export async function open(key: BackupKey, envelope: Envelope): Promise<Opened> {
  if (envelope.address !== key.address) throw new BackupOtherOwnerError(`the copy is of ${envelope.address}, not of this key's ${key.address}`)
  verifyEnvelope(key.curve, envelope)
  const iv = envelope.ciphertext.slice(0, IV_BYTES)
  const additionalData = new Uint8Array(copyAdditionalData(envelope.address, envelope.version))
  try {
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData, tagLength: 128 }, key.cipherKey, envelope.ciphertext.slice(IV_BYTES))
    return { version: envelope.version, payload: new Uint8Array(plain) }
  } catch (e) {
    throw new BackupTamperedError(`the copy of ${envelope.address} at version ${envelope.version} does not decrypt under its owner's key`, { cause: e })
  }
}
