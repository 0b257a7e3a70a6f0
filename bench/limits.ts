// What the signatures allow: a direct payment takes six signed messages (LockedTransfer, Processed, RevealSecret,
// Delivered, Unlock, Processed), three signed by each node and verified (its signer recovered) by the other, so with
// the rates measured now a node cannot pay faster than 1 / (3 / sign rate + 3 / verify rate). The rows these bound
// print it beside them.
import { packMessage } from '../src/protocol/messages/pack.ts'
import type { LockedTransfer } from '../src/protocol/messages/types.ts'
import { readMessage } from '../src/protocol/messages/wire.ts'
import { secp256k1Engine, setSecp256k1Engine, wasmSecp256k1Engine } from '../src/protocol/secp256k1.ts'
import { recoverPackedSignerSync, signPackedSync } from '../src/protocol/signature.ts'
import { useNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import fixture from '../test/fixtures/messages/LockedTransfer.json' with { type: 'json' }
import { opsPerSecond } from './measure.ts'

const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const

export type CryptoLimit = { sign: number; verify: number; paymentsPerSecond: number }

/**
 * The sign and verify rates of packed LockedTransfers with `engine` (native libsecp256k1 as the headless node runs
 * it, or its WASM build as the page's node does), measured now, and the payments per second they allow one node.
 * The process's engine is put back afterwards.
 */
export async function cryptoLimit(engine: 'native' | 'wasm'): Promise<CryptoLimit> {
  const before = secp256k1Engine()
  try {
    if (engine === 'native') await useNativeSecp256k1()
    else {
      const wasm = await wasmSecp256k1Engine()
      if (wasm) setSecp256k1Engine(wasm)
    }
    if (secp256k1Engine().name !== engine) throw new Error(`the ${engine} secp256k1 engine did not load`)
    const { sign, verify } = signAndVerifyRates()
    return { sign, verify, paymentsPerSecond: 1 / (3 / sign + 3 / verify) }
  } finally {
    setSecp256k1Engine(before)
  }
}

/** LockedTransfers packed and signed, and packed and verified (the signer recovered), per second with the engine in use. */
export function signAndVerifyRates(): { sign: number; verify: number } {
  const transfer = readMessage(fixture.message) as LockedTransfer & { signature: `0x${string}` }
  const signed = signPackedSync(key, packMessage(transfer))
  return {
    sign: opsPerSecond((i) => signPackedSync(key, packMessage({ ...transfer, message_identifier: BigInt(i) }))),
    verify: opsPerSecond(() => recoverPackedSignerSync(packMessage(transfer), signed)),
  }
}
