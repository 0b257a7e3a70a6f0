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
function recoveryId(signature: Uint8Array): number {
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

/** Installs an engine made elsewhere (the native one of the headless node: src/cli/nativeSecp256k1.ts). */
export function setSecp256k1Engine(next: Secp256k1Engine): void {
  engine = next
}

/**
 * For a host where the pure-JS curve only bridges the time until the WASM has come (the browser worker): noble's
 * tables of the generator's multiples with window 4 instead of 8, built in about 15 ms instead of 75 (measured in
 * Node), so that deriving the node's key (viem's account, the address) does not hold up its start. Meanwhile JS
 * signs about 1.5 times slower. Process-wide, as the tables are: viem shares this noble.
 */
export function useSmallJsTables(): void {
  secp256k1.utils.precompute(4)
}

/**
 * Switches to the WASM engine if it loads, unless a faster one (native) is already in use; returns the engine
 * in use. Safe to call more than once.
 */
export async function useWasmSecp256k1(): Promise<Secp256k1Engine['name']> {
  await useWasmKeccak()
  if (engine.name !== 'js') return engine.name
  engine = (await wasmSecp256k1Engine()) ?? engine
  return engine.name
}

/** The WASM engine (libsecp256k1 as tiny-secp256k1 builds it), or undefined where it does not load; not put in use. */
export async function wasmSecp256k1Engine(): Promise<Secp256k1Engine | undefined> {
  try {
    const tiny = await import('tiny-secp256k1')
    return libsecp256k1Engine('wasm', {
      sign: (hash, privateKey) => tiny.signRecoverable(hash, privateKey),
      recover: (hash, signature, id) => tiny.recover(hash, signature, id as 0 | 1, false),
      publicKey: (privateKey) => tiny.pointFromScalar(privateKey, false),
      multiply: (point, scalar) => tiny.pointMultiply(point, scalar, false),
    })
  } catch {
    // No WASM here (or the bundler could not load it): the JS engine stays, only slower.
    return undefined
  }
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
