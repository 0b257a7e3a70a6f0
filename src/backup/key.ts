import { hexToBytes, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'

/**
 * The owner's key for its backup copies (docs/decisions/0032-off-browser-backup.md): the node's private key signs
 * them, and an AES-256-GCM key derived from it encrypts them:
 *
 *   key = HKDF-SHA256(ikm = the node's private key (32 bytes), salt = empty, info = "sluice-backup/1 aes-256-gcm")
 *
 * The info string names the format, so another use of the node's key (or a later format) derives another key.
 * WebCrypto derives it and keeps it non-extractable: the same code runs in the page's worker and in Node.
 */
export type BackupKey = {
  address: Address
  /** Signs the copies and the fetch requests. */
  privateKey: Hex
  /** The curve engine its owner's host chose: it signs with the key, and checks the copies fetched. */
  curve: Secp256k1Engine
  /** AES-256-GCM, non-extractable. */
  cipherKey: CryptoKey
}

export const HKDF_INFO = 'sluice-backup/1 aes-256-gcm'

export async function backupKey(curve: Secp256k1Engine, privateKey: Hex): Promise<BackupKey> {
  const address = privateKeyToAddress(privateKey)
  const ikm = await crypto.subtle.importKey('raw', new Uint8Array(hexToBytes(privateKey)), 'HKDF', false, ['deriveKey'])
  const cipherKey = await crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: new TextEncoder().encode(HKDF_INFO) },
    ikm,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  )
  return { address, privateKey, curve, cipherKey }
}
