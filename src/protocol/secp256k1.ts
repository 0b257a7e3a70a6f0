import { secp256k1 } from '@noble/curves/secp256k1'
import { keccak256Bytes } from './keccak.ts'

/**
 * The secp256k1 operations the node needs, behind one small interface: pure JS (`jsSecp256k1`, noble, always there)
 * or libsecp256k1 (`libsecp256k1Engine` over its WASM or native binding, 4 to 30 times faster). The core holds no
 * engine of its own: whoever signs or recovers is given one, and the shell chooses it (src/crypto/curveEngines.ts,
 * src/cli/nativeSecp256k1.ts). All engines give the same bytes (RFC 6979, low s).
 */
export type Secp256k1Engine = {
  name: 'js' | 'wasm' | 'native'
  /** 65 bytes r || s || v with v in {27, 28}; deterministic (RFC 6979), low s. */
  sign(hash: Uint8Array, privateKey: Uint8Array): Uint8Array
  /** The 64-byte public key (x || y) that made `signature` over `hash`, or null. */
  recover(hash: Uint8Array, signature: Uint8Array): Uint8Array | null
  /** The 65-byte uncompressed public key (0x04 || x || y) of `privateKey`. */
  publicKey(privateKey: Uint8Array): Uint8Array
  /** ECDH: `point` (SEC1, 33 or 65 bytes) times `scalar`, as a 65-byte uncompressed point; throws if either is invalid. */
  multiply(point: Uint8Array, scalar: Uint8Array): Uint8Array
}

/** v as 0/1 from a 65-byte signature whose last byte is 0, 1, 27 or 28; -1 otherwise. */
function recoveryId(signature: Uint8Array): number {
  const v = signature[64]!
  return v === 27 || v === 28 ? v - 27 : v === 0 || v === 1 ? v : -1
}

/** Pure JS (noble): always there, the engine of the tests and the one a host falls back to. */
export const jsSecp256k1: Secp256k1Engine = {
  name: 'js',
  sign(hash, privateKey) {
    const sig = secp256k1.sign(hash, privateKey)
    const out = new Uint8Array(65)
    out.set(sig.toCompactRawBytes(), 0)
    out[64] = 27 + sig.recovery
    return out
  },
  recover(hash, signature) {
    const id = recoveryId(signature)
    if (signature.length !== 65 || id < 0) return null
    try {
      const point = secp256k1.Signature.fromCompact(signature.subarray(0, 64)).addRecoveryBit(id).recoverPublicKey(hash)
      return point.toRawBytes(false).subarray(1)
    } catch {
      return null
    }
  },
  publicKey: (privateKey) => secp256k1.getPublicKey(privateKey, false),
  multiply: (point, scalar) => secp256k1.getSharedSecret(scalar, point, false),
}

/** What a libsecp256k1 binding offers (WASM or native): compact signatures, 65-byte uncompressed points. */
export type Libsecp256k1Binding = {
  sign(hash: Uint8Array, privateKey: Uint8Array): { signature: Uint8Array; recoveryId: number }
  /** May throw or give null for an invalid signature. */
  recover(hash: Uint8Array, signature: Uint8Array, recoveryId: number): Uint8Array | null
  publicKey(privateKey: Uint8Array): Uint8Array | null
  multiply(point: Uint8Array, scalar: Uint8Array): Uint8Array | null
}

/** An engine over a libsecp256k1 binding: Ethereum's 65-byte signatures (v 27/28) and 64-byte public keys. */
export function libsecp256k1Engine(name: 'wasm' | 'native', lib: Libsecp256k1Binding): Secp256k1Engine {
  return {
    name,
    sign(hash, privateKey) {
      // libsecp256k1 signs deterministically (RFC 6979) with low s, as noble does: the same bytes everywhere.
      const { signature, recoveryId: id } = lib.sign(hash, privateKey)
      const out = new Uint8Array(65)
      out.set(signature, 0)
      out[64] = 27 + id
      return out
    },
    recover(hash, signature) {
      const id = recoveryId(signature)
      if (signature.length !== 65 || id < 0) return null
      try {
        return lib.recover(hash, signature.subarray(0, 64), id)?.subarray(1) ?? null
      } catch {
        return null
      }
    },
    publicKey(privateKey) {
      const point = lib.publicKey(privateKey)
      if (!point) throw new Error('invalid private key')
      return point
    },
    multiply(point, scalar) {
      const product = lib.multiply(point, scalar)
      if (!product) throw new Error('the product is the point at infinity')
      return product
    },
  }
}

/** The Ethereum address bytes of a 64-byte public key. */
export function addressOfPublicKey(publicKey: Uint8Array): Uint8Array {
  return keccak256Bytes(publicKey).subarray(12)
}
