// Node only: nothing the browser loads imports this module (test/unit/node/browserSafe.test.ts checks it).
import { createRequire } from 'node:module'
import { libsecp256k1Engine, secp256k1Engine, setSecp256k1Engine, useWasmSecp256k1, type Secp256k1Engine } from '../protocol/secp256k1.ts'

type NativeBindings = {
  ecdsaSign(hash: Uint8Array, privateKey: Uint8Array, options?: object, output?: Uint8Array): { signature: Uint8Array; recid: number }
  ecdsaRecover(signature: Uint8Array, recid: number, hash: Uint8Array, compressed: boolean, output?: Uint8Array): Uint8Array
  publicKeyCreate(privateKey: Uint8Array, compressed: boolean): Uint8Array
  publicKeyTweakMul(publicKey: Uint8Array, tweak: Uint8Array, compressed: boolean): Uint8Array
}

/**
 * Switches to libsecp256k1 as a native Node addon (the `secp256k1` package's prebuilt binary), which signs about
 * 4 and recovers about 8 times faster than the same library in WASM. A headless node signs and verifies every
 * message it sends and receives, so this is most of its CPU per payment. Falls back to WASM when the prebuilt
 * binary does not load (another platform); returns the engine in use.
 */
export async function useNativeSecp256k1(): Promise<Secp256k1Engine['name']> {
  if (secp256k1Engine().name === 'native') return 'native'
  let native: NativeBindings
  try {
    // The bindings alone: the package's index falls back to a pure-JS library we do not want.
    native = createRequire(import.meta.url)('secp256k1/bindings.js') as NativeBindings
  } catch {
    return useWasmSecp256k1()
  }
  await useWasmSecp256k1() // Keccak in WASM, whatever the curve engine
  setSecp256k1Engine(
    libsecp256k1Engine('native', {
      sign: (hash, privateKey) => {
        const { signature, recid } = native.ecdsaSign(hash, privateKey)
        return { signature, recoveryId: recid }
      },
      recover: (hash, signature, id) => native.ecdsaRecover(signature, id, hash, false),
      publicKey: (privateKey) => native.publicKeyCreate(privateKey, false),
      multiply: (point, scalar) => native.publicKeyTweakMul(point, scalar, false),
    }),
  )
  return 'native'
}
