// The pure protocol core: how fast messages are packed and signed, verified, and what one whole payment costs.
import { sha256 } from 'viem'
import { loadWasmSecp256k1 } from '../src/crypto/curveEngines.ts'
import { jsSecp256k1, type Secp256k1Engine } from '../src/protocol/secp256k1.ts'
import { defaultContext } from '../src/protocol/state/access.ts'
import { loadNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import { Network } from '../test/unit/protocol/support/network.ts'
import { signAndVerifyRates } from './limits.ts'
import { cpuMsPerRun, fmt, opsPerSecond } from './measure.ts'

async function paymentCpu(curve: Secp256k1Engine, mediated: boolean): Promise<number> {
  const net = new Network(['A', 'B', 'C'], { ...defaultContext, curve })
  await net.open('A', 'B', 10n ** 12n, 0n, 1000n, 50n)
  await net.open('B', 'C', 10n ** 12n, 0n, 1000n, 50n)
  let id = 1n
  return cpuMsPerRun(async () => {
    await net.pay('A', mediated ? 'C' : 'B', 1n, id++, mediated ? [['B', 'C']] : undefined)
    await net.deliverAll()
  }, 200)
}

export async function benchProtocol(): Promise<Record<string, string>> {
  const rows: Record<string, string> = {}
  for (const engine of ['js', 'wasm', 'native'] as const) {
    const curve = engine === 'js' ? jsSecp256k1 : engine === 'wasm' ? await loadWasmSecp256k1() : await loadNativeSecp256k1()
    if (curve?.name !== engine) throw new Error(`engine ${engine} not available`)
    const { sign, verify } = signAndVerifyRates(curve)
    rows[`LockedTransfer packed + signed /s (${engine})`] = fmt(sign)
    rows[`LockedTransfer packed + verified /s (${engine})`] = fmt(verify)
    rows[`direct payment, CPU ms (${engine})`] = fmt(await paymentCpu(curve, false))
    rows[`mediated payment A-B-C, CPU ms (${engine})`] = fmt(await paymentCpu(curve, true))
  }
  rows['sha256 of a secret /s'] = fmt(opsPerSecond((i) => sha256(`0x${i.toString(16).padStart(64, '0')}`)))
  return rows
}
