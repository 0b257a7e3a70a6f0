import { secp256k1 } from '@noble/curves/secp256k1'
import { keccak256Bytes, useWasmKeccak } from './keccak.ts'

/**
 * The secp256k1 operations the node needs, behind one small interface with two engines: pure JS (noble, always
 * there) and libsecp256k1 compiled to WASM (tiny-secp256k1), which signs about 4 and recovers about 6 times
 * faster here. `useWasmSecp256k1()` switches to WASM where it loads, in Node and in the browser alike.
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
export function recoveryId(signature: Uint8Array): number {
  const v = signature[64]!
  return v === 27 || v === 28 ? v - 27 : v === 0 || v === 1 ? v : -1
}

const jsEngine: Secp256k1Engine = {
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

let engine: Secp256k1Engine = jsEngine

export function secp256k1Engine(): Secp256k1Engine {
  return engine
}

/** Installs an engine made elsewhere (the native one of the headless node: src/protocol/secp256k1Native.ts). */
export function setSecp256k1Engine(next: Secp256k1Engine): void {
  engine = next
}

/**
 * Switches to the WASM engine if it loads, unless a faster one (native) is already in use; returns the engine
 * in use. Safe to call more than once.
 */
export async function useWasmSecp256k1(): Promise<Secp256k1Engine['name']> {
  await useWasmKeccak()
  if (engine.name !== 'js') return engine.name
  try {
    const tiny = await import('tiny-secp256k1')
    engine = {
      name: 'wasm',
      sign(hash, privateKey) {
        const { signature, recoveryId: id } = tiny.signRecoverable(hash, privateKey)
        const out = new Uint8Array(65)
        out.set(signature, 0)
        out[64] = 27 + id
        return out
      },
      recover(hash, signature) {
        const id = recoveryId(signature)
        if (signature.length !== 65 || id < 0) return null
        try {
          return tiny.recover(hash, signature.subarray(0, 64), id as 0 | 1, false)?.subarray(1) ?? null
        } catch {
          return null
        }
      },
      publicKey(privateKey) {
        const point = tiny.pointFromScalar(privateKey, false)
        if (!point) throw new Error('invalid private key')
        return point
      },
      multiply(point, scalar) {
        const product = tiny.pointMultiply(point, scalar, false)
        if (!product) throw new Error('the product is the point at infinity')
        return product
      },
    }
  } catch {
    // No WASM here (or the bundler could not load it): the JS engine stays, only slower.
  }
  return engine.name
}

/** The Ethereum address bytes of a 64-byte public key. */
export function addressOfPublicKey(publicKey: Uint8Array): Uint8Array {
  return keccak256Bytes(publicKey).subarray(12)
}
