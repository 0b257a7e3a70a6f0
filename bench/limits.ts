// What the signatures allow: a direct payment takes six signed messages (LockedTransfer, Processed, RevealSecret,
// Delivered, Unlock, Processed), three signed by each node and verified (its signer recovered) by the other, so with
// the rates measured now a node cannot pay faster than 1 / (3 / sign rate + 3 / verify rate). The rows these bound
// print it beside them.
import { packMessage } from '../src/protocol/messages/pack.ts'
import type { LockedTransfer } from '../src/protocol/messages/types.ts'
import { readMessage } from '../src/protocol/messages/wire.ts'
import { loadWasmSecp256k1 } from '../src/crypto/curveEngines.ts'
import type { Secp256k1Engine } from '../src/protocol/secp256k1.ts'
import { recoverPackedSignerSync, signPackedSync } from '../src/protocol/signature.ts'
import { loadNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import fixture from '../test/fixtures/messages/LockedTransfer.json' with { type: 'json' }
import { opsPerSecond } from './measure.ts'

const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const

export type CryptoLimit = { sign: number; verify: number; paymentsPerSecond: number }

/**
 * The sign and verify rates of packed LockedTransfers with `engine` (native libsecp256k1 as the headless node runs
 * it, or its WASM build as the page's node does), measured now, and the payments per second they allow one node.
 */
export async function cryptoLimit(engine: 'native' | 'wasm'): Promise<CryptoLimit> {
  const curve = engine === 'native' ? await loadNativeSecp256k1() : await loadWasmSecp256k1()
  if (curve?.name !== engine) throw new Error(`the ${engine} secp256k1 engine did not load`)
  const { sign, verify } = signAndVerifyRates(curve)
  return { sign, verify, paymentsPerSecond: 1 / (3 / sign + 3 / verify) }
}

/** LockedTransfers packed and signed, and packed and verified (the signer recovered), per second with `curve`. */
export function signAndVerifyRates(curve: Secp256k1Engine): { sign: number; verify: number } {
  const transfer = readMessage(fixture.message) as LockedTransfer & { signature: `0x${string}` }
  const signed = signPackedSync(curve, key, packMessage(transfer))
  return {
    sign: opsPerSecond((i) => signPackedSync(curve, key, packMessage({ ...transfer, message_identifier: BigInt(i) }))),
    verify: opsPerSecond(() => recoverPackedSignerSync(curve, packMessage(transfer), signed)),
  }
}
