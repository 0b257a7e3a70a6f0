import fc from 'fast-check'
import { bytesToHex, hashMessage, hexToBytes, type Hex } from 'viem'
import { privateKeyToAddress, sign, serializeSignature } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { backgroundWasmSecp256k1, loadWasmSecp256k1, switchableSecp256k1, useSmallJsTables } from '../../../src/crypto/curveEngines.ts'
import { jsSecp256k1, type Secp256k1Engine } from '../../../src/protocol/secp256k1.ts'
import { eip191Hash, recoverPackedSignerSync, signPackedSync } from '../../../src/protocol/signature.ts'

const key = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .filter((k) => k.some((b) => b !== 0) && k[0]! < 0xff)
  .map((k) => bytesToHex(k))
const data = fc.uint8Array({ minLength: 0, maxLength: 300 })

describe('secp256k1 engines', () => {
  const wasmEngine = async (): Promise<Secp256k1Engine> => {
    const wasm = await loadWasmSecp256k1()
    if (!wasm) throw new Error('the WASM engine did not load')
    return wasm
  }

  test('the WASM engine loads in Node', async () => {
    expect((await loadWasmSecp256k1())?.name).toBe('wasm')
  })

  test('JS and WASM sign identically (RFC 6979) and each recovers the other (property)', async () => {
    const wasm = await wasmEngine()
    const { secp256k1 } = await import('@noble/curves/secp256k1')
    fc.assert(
      fc.property(key, data, (k, d) => {
        const hash = eip191Hash(d)
        const fromWasm = wasm.sign(hash, hexToBytes(k))
        const noble = secp256k1.sign(hash, hexToBytes(k))
        expect(bytesToHex(fromWasm.subarray(0, 64))).toBe(bytesToHex(noble.toCompactRawBytes()))
        expect(fromWasm[64]).toBe(27 + noble.recovery)
        expect(wasm.recover(hash, fromWasm)).not.toBeNull()
      }),
      { numRuns: 50 },
    )
  })

  test("with the small tables (the browser's bridge until the WASM), keys, signatures and recovery are the WASM engine's (property)", async () => {
    const wasm = await wasmEngine()
    const { secp256k1 } = await import('@noble/curves/secp256k1')
    useSmallJsTables()
    try {
      fc.assert(
        fc.property(key, data, (k, d) => {
          const hash = eip191Hash(d)
          expect(bytesToHex(secp256k1.getPublicKey(hexToBytes(k), false))).toBe(bytesToHex(wasm.publicKey(hexToBytes(k))))
          const noble = secp256k1.sign(hash, hexToBytes(k))
          const fromWasm = wasm.sign(hash, hexToBytes(k))
          expect(bytesToHex(noble.toCompactRawBytes())).toBe(bytesToHex(fromWasm.subarray(0, 64)))
          expect(bytesToHex(noble.recoverPublicKey(hash).toRawBytes(false))).toBe(bytesToHex(wasm.publicKey(hexToBytes(k))))
        }),
        { numRuns: 50 },
      )
    } finally {
      secp256k1.utils.precompute(8) // noble's default again, for the rest of this process
    }
  })

  test.each([['js'], ['wasm']] as const)("%s: signatures match viem's EIP-191 signing and recover the signer, with v as 27/28 or 0/1", async (name) => {
    const curve = name === 'js' ? jsSecp256k1 : await wasmEngine()
    await fc.assert(
      fc.asyncProperty(key, data, async (k, d) => {
        const ours = signPackedSync(curve, k as Hex, d)
        const viem = serializeSignature(await sign({ hash: hashMessage({ raw: d }), privateKey: k as Hex }))
        expect(ours).toBe(viem)
        expect(recoverPackedSignerSync(curve, d, ours)).toBe(privateKeyToAddress(k as Hex))
        const v01 = `${ours.slice(0, -2)}${(parseInt(ours.slice(-2), 16) - 27).toString(16).padStart(2, '0')}` as Hex
        expect(recoverPackedSignerSync(curve, d, v01)).toBe(privateKeyToAddress(k as Hex))
      }),
      { numRuns: 30 },
    )
  })

  test.each([['js'], ['wasm']] as const)('%s: a signature of the wrong length or with a bad v recovers nobody', async (name) => {
    const curve = name === 'js' ? jsSecp256k1 : await wasmEngine()
    const sig = signPackedSync(curve, '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d', '0x01')
    expect(() => recoverPackedSignerSync(curve, '0x01', `${sig.slice(0, -2)}1d` as Hex)).toThrow(/no public key/)
    expect(() => recoverPackedSignerSync(curve, '0x01', sig.slice(0, -2) as Hex)).toThrow(/no public key/)
  })

  test('a switchable engine calls the engine of the moment, and says which it is', async () => {
    const wasm = await wasmEngine()
    const calls: string[] = []
    const counting = (engine: Secp256k1Engine): Secp256k1Engine => ({
      ...engine,
      sign: (h, k) => {
        calls.push(engine.name)
        return engine.sign(h, k)
      },
    })
    const { engine, use } = switchableSecp256k1(counting(jsSecp256k1))
    const k = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const
    const before = signPackedSync(engine, k, '0x01')
    expect(engine.name).toBe('js')
    use(counting(wasm))
    expect(engine.name).toBe('wasm')
    expect(signPackedSync(engine, k, '0x01')).toBe(before)
    expect(calls).toEqual(['js', 'wasm'])
  })

  test("the background engine is JS at once and WASM once loaded, each node's own", async () => {
    const { secp256k1 } = await import('@noble/curves/secp256k1')
    try {
      const first = backgroundWasmSecp256k1()
      const second = backgroundWasmSecp256k1()
      expect(first.engine.name).toBe('js')
      expect(await first.loaded).toBe('wasm')
      expect(first.engine.name).toBe('wasm')
      expect(first.engine).not.toBe(second.engine)
      await second.loaded
    } finally {
      secp256k1.utils.precompute(8) // noble's default again, for the rest of this process
    }
  })
})
