import { secp256k1 } from '@noble/curves/secp256k1'
import { useWasmKeccak } from '../protocol/keccak.ts'
import { jsSecp256k1, libsecp256k1Engine, type Secp256k1Engine } from '../protocol/secp256k1.ts'

/**
 * Where a host gets its secp256k1 engine, browser-safe: libsecp256k1 compiled to WASM (tiny-secp256k1), which signs
 * about 4 and recovers about 6 times faster than the pure-JS engine, in Node and in the browser alike. The core never
 * loads an engine: the host passes the one it chose to the node (`NodeConfig.secp256k1`) or to a service.
 */

/**
 * The WASM engine, or undefined where it does not load. Keccak switches to WASM on the way (src/protocol/keccak.ts),
 * as every host that wants the curve fast wants the hash fast too.
 */
export async function loadWasmSecp256k1(): Promise<Secp256k1Engine | undefined> {
  await useWasmKeccak()
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

/** The WASM engine where it loads, else the JS one. */
export async function wasmOrJsSecp256k1(): Promise<Secp256k1Engine> {
  return (await loadWasmSecp256k1()) ?? jsSecp256k1
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

/** An engine whose methods call the engine of the moment, and the switch to another. */
export type SwitchableSecp256k1 = { engine: Secp256k1Engine; use(next: Secp256k1Engine): void }

/**
 * One node's engine that may change while it runs: every call goes to the engine of the moment. Made by the shell for
 * that node (never shared by the core); safe because all engines sign the same bytes. `name` is the current one's.
 */
export function switchableSecp256k1(initial: Secp256k1Engine): SwitchableSecp256k1 {
  let current = initial
  return {
    engine: {
      get name() {
        return current.name
      },
      sign: (hash, privateKey) => current.sign(hash, privateKey),
      recover: (hash, signature) => current.recover(hash, signature),
      publicKey: (privateKey) => current.publicKey(privateKey),
      multiply: (point, scalar) => current.multiply(point, scalar),
    },
    use(next) {
      current = next
    },
  }
}

/**
 * The engine of a node that must not wait for the WASM (`secp256k1Wasm: 'background'`): JS with the small tables at
 * once, WASM from the moment it has loaded. `loaded` settles when the switch is done (or the WASM did not load).
 */
export function backgroundWasmSecp256k1(): { engine: Secp256k1Engine; loaded: Promise<Secp256k1Engine['name']> } {
  useSmallJsTables()
  const switchable = switchableSecp256k1(jsSecp256k1)
  const loaded = loadWasmSecp256k1().then((wasm) => {
    if (wasm) switchable.use(wasm)
    return switchable.engine.name
  })
  return { engine: switchable.engine, loaded }
}
