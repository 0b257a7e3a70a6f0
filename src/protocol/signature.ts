import { keccak256Bytes } from './keccak.ts'
import { bytesToHex, getAddress, hexToBytes, type Address, type Hex } from 'viem'
import { addressOfPublicKey, type Secp256k1Engine } from './secp256k1.ts'

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

/**
 * Signs packed data the Raiden way: secp256k1 over EIP-191 of the raw bytes, v in {27, 28}. Here and everywhere in
 * the core, the curve engine comes first: the caller's, chosen by the shell (src/protocol/secp256k1.ts).
 */
export function signPackedSync(curve: Secp256k1Engine, privateKey: Hex, data: Hex | Uint8Array): Hex {
  return bytesToHex(curve.sign(eip191Hash(asBytes(data)), keyBytes(privateKey)))
}

/**
 * The address that signed `data` (EIP-191) with `signature`, and its 64-byte public key (x || y): recovery finds
 * the key for free, and a payment's secret can be encrypted to it (secretCipher.ts). Throws if none is recovered.
 */
export function recoverPackedSignerKeySync(curve: Secp256k1Engine, data: Hex | Uint8Array, signature: Hex): { signer: Address; publicKey: Hex } {
  const sig = hexToBytes(signature)
  const publicKey = sig.length === 65 ? curve.recover(eip191Hash(asBytes(data)), sig) : null
  if (!publicKey) throw new Error('signature recovers no public key')
  return { signer: getAddress(bytesToHex(addressOfPublicKey(publicKey))), publicKey: bytesToHex(publicKey) }
}

/** The address that signed `data` (EIP-191) with `signature`; throws if none can be recovered. */
export function recoverPackedSignerSync(curve: Secp256k1Engine, data: Hex | Uint8Array, signature: Hex): Address {
  return recoverPackedSignerKeySync(curve, data, signature).signer
}

export async function signPacked(curve: Secp256k1Engine, privateKey: Hex, data: Hex | Uint8Array): Promise<Hex> {
  return signPackedSync(curve, privateKey, data)
}

export async function recoverPackedSigner(curve: Secp256k1Engine, data: Hex | Uint8Array, signature: Hex): Promise<Address> {
  return recoverPackedSignerSync(curve, data, signature)
}
