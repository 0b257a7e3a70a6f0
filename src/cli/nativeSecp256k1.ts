// Node only: nothing the browser loads imports this module (test/unit/node/browserSafe.test.ts checks it).
import { createRequire } from 'node:module'
import { wasmOrJsSecp256k1 } from '../crypto/curveEngines.ts'
import { useWasmKeccak } from '../protocol/keccak.ts'
import { libsecp256k1Engine, type Secp256k1Engine } from '../protocol/secp256k1.ts'

type NativeBindings = {
  ecdsaSign(hash: Uint8Array, privateKey: Uint8Array, options?: object, output?: Uint8Array): { signature: Uint8Array; recid: number }
  ecdsaRecover(signature: Uint8Array, recid: number, hash: Uint8Array, compressed: boolean, output?: Uint8Array): Uint8Array
  publicKeyCreate(privateKey: Uint8Array, compressed: boolean): Uint8Array
  publicKeyTweakMul(publicKey: Uint8Array, tweak: Uint8Array, compressed: boolean): Uint8Array
}

/**
 * libsecp256k1 as a native Node addon (the `secp256k1` package's prebuilt binary), which signs about 4 and recovers
 * about 8 times faster than the same library in WASM. A headless node signs and verifies every message it sends and
 * receives, so this is most of its CPU per payment. Falls back to WASM, then JS, when the prebuilt binary does not
 * load (another platform). The caller passes the engine on (`NodeConfig.secp256k1`, a service's options).
 */
export async function loadNativeSecp256k1(): Promise<Secp256k1Engine> {
  let native: NativeBindings
  try {
    // The bindings alone: the package's index falls back to a pure-JS library we do not want.
    native = createRequire(import.meta.url)('secp256k1/bindings.js') as NativeBindings
  } catch {
    return wasmOrJsSecp256k1()
  }
  await useWasmKeccak() // Keccak in WASM, whatever the curve engine
  return libsecp256k1Engine('native', {
    sign: (hash, privateKey) => {
      const { signature, recid } = native.ecdsaSign(hash, privateKey)
      return { signature, recoveryId: recid }
    },
    recover: (hash, signature, id) => native.ecdsaRecover(signature, id, hash, false),
    publicKey: (privateKey) => native.publicKeyCreate(privateKey, false),
    multiply: (point, scalar) => native.publicKeyTweakMul(point, scalar, false),
  })
}
