import fc from 'fast-check'
import { bytesToHex, hexToBytes, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { loadNativeSecp256k1 } from '../../../src/cli/nativeSecp256k1.ts'
import { eip191Hash, recoverPackedSignerSync, signPackedSync } from '../../../src/protocol/signature.ts'

const key = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .filter((k) => k.some((b) => b !== 0) && k[0]! < 0xff)
  .map((k) => bytesToHex(k))
const data = fc.uint8Array({ minLength: 0, maxLength: 300 })

describe('the native secp256k1 engine (headless node)', () => {
  test('loads from the prebuilt addon', async () => {
    expect((await loadNativeSecp256k1()).name).toBe('native')
  })

  test('signs exactly as noble does (RFC 6979, low s) and recovers the signer (property)', async () => {
    const native = await loadNativeSecp256k1()
    const { secp256k1 } = await import('@noble/curves/secp256k1')
    fc.assert(
      fc.property(key, data, (k, d) => {
        const hash = eip191Hash(d)
        const sig = native.sign(hash, hexToBytes(k))
        const noble = secp256k1.sign(hash, hexToBytes(k))
        expect(bytesToHex(sig.subarray(0, 64))).toBe(bytesToHex(noble.toCompactRawBytes()))
        expect(sig[64]).toBe(27 + noble.recovery)
        expect(bytesToHex(native.recover(hash, sig)!)).toBe(bytesToHex(secp256k1.getPublicKey(hexToBytes(k), false).subarray(1)))
        expect(recoverPackedSignerSync(native, d, signPackedSync(native, k as Hex, d))).toBe(privateKeyToAddress(k as Hex))
      }),
      { numRuns: 50 },
    )
  })

  test('a bad v, a wrong length or an invalid r/s recovers nobody', async () => {
    const native = await loadNativeSecp256k1()
    const hash = eip191Hash(new Uint8Array([1]))
    const sig = native.sign(hash, hexToBytes('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'))
    expect(native.recover(hash, Uint8Array.of(...sig.subarray(0, 64), 29))).toBeNull()
    expect(native.recover(hash, sig.subarray(0, 64))).toBeNull()
    expect(native.recover(hash, new Uint8Array(65).fill(0xff))).toBeNull()
    expect(native.recover(hash, Uint8Array.of(...new Uint8Array(64), 27))).toBeNull()
  })
})
