import { keccak256Bytes } from './keccak.ts'
import { bytesToHex, getAddress, hexToBytes, type Address, type Hex } from 'viem'
import { addressOfPublicKey, secp256k1Engine } from './secp256k1.ts'

const encoder = new TextEncoder()
const keyCache = new Map<Hex, Uint8Array>()

/** keccak256 of the EIP-191 `personal_sign` form of `data`: "\x19Ethereum Signed Message:\n" + length + data. */
export function eip191Hash(data: Uint8Array): Uint8Array {
  const prefix = encoder.encode(`\x19Ethereum Signed Message:\n${data.length}`)
  const all = new Uint8Array(prefix.length + data.length)
  all.set(prefix, 0)
  all.set(data, prefix.length)
  return keccak256Bytes(all)
}

const asBytes = (data: Hex | Uint8Array) => (typeof data === 'string' ? hexToBytes(data) : data)

function keyBytes(privateKey: Hex): Uint8Array {
  let bytes = keyCache.get(privateKey)
  if (!bytes) {
    bytes = hexToBytes(privateKey)
    if (keyCache.size > 64) keyCache.clear()
    keyCache.set(privateKey, bytes)
  }
  return bytes
}

/** Signs packed data the Raiden way: secp256k1 over EIP-191 of the raw bytes, v in {27, 28}. */
export function signPackedSync(privateKey: Hex, data: Hex | Uint8Array): Hex {
  return bytesToHex(secp256k1Engine().sign(eip191Hash(asBytes(data)), keyBytes(privateKey)))
}

/** The address that signed `data` (EIP-191) with `signature`; throws if none can be recovered. */
export function recoverPackedSignerSync(data: Hex | Uint8Array, signature: Hex): Address {
  const sig = hexToBytes(signature)
  const publicKey = sig.length === 65 ? secp256k1Engine().recover(eip191Hash(asBytes(data)), sig) : null
  if (!publicKey) throw new Error('signature recovers no public key')
  const address = bytesToHex(addressOfPublicKey(publicKey))
  rememberPublicKey(address, publicKey)
  return getAddress(address)
}

/**
 * Public keys of the signers we recovered lately, by lowercase address: what we need to encrypt a payment's secret
 * to its target (secretCipher.ts). Recovery finds them for free; a direct partner's is known after any message.
 */
const publicKeys = new Map<string, Uint8Array>()
const MAX_PUBLIC_KEYS = 4096

function rememberPublicKey(lowercaseAddress: string, publicKey: Uint8Array) {
  if (publicKeys.has(lowercaseAddress)) return
  if (publicKeys.size >= MAX_PUBLIC_KEYS) publicKeys.delete(publicKeys.keys().next().value!)
  publicKeys.set(lowercaseAddress, publicKey.slice())
}

/** The 64-byte public key (x || y) of `address` if a signature of it was recovered lately, else undefined. */
export function knownPublicKey(address: Address): Uint8Array | undefined {
  return publicKeys.get(address.toLowerCase())
}

export async function signPacked(privateKey: Hex, data: Hex | Uint8Array): Promise<Hex> {
  return signPackedSync(privateKey, data)
}

export async function recoverPackedSigner(data: Hex | Uint8Array, signature: Hex): Promise<Address> {
  return recoverPackedSignerSync(data, signature)
}
