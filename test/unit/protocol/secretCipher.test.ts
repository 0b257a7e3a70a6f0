import { describe, expect, test } from 'vitest'
import { bytesToHex, hexToBytes, sha256, type Hex } from 'viem'
import { decryptSecret, encapsulate, encryptSecret, openAes, sealAes } from '../../../src/protocol/secretCipher.ts'
import { loadWasmSecp256k1 } from '../../../src/crypto/curveEngines.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

// The format is eciesjs's default (what raiden-ts `transfers/utils.ts` uses for metadata.secret); the vectors below
// are eciesjs's own (ecies/js `src/tests/crypt.test.ts`: "tests multiply and hkdf", "tests aes decrypt with known key").
const scalar = (n: number) => {
  const k = new Uint8Array(32)
  k[31] = n
  return k
}
const targetKey = hexToBytes('0x95d3c5e483e9b1d4f5fc8e79b2deaf51362980de62dbb082a9a4257eef653d7d')
const targetPublicKey = () => jsSecp256k1.publicKey(targetKey).subarray(1) // 64 bytes, as recovery gives it
const secret = sha256('0x01')
const fixed = () => ({
  payload: { secret, amount: 100n, paymentId: 42n },
  targetPublicKey: targetPublicKey(),
  ephemeralPrivateKey: scalar(7),
  nonce: new Uint8Array(16).fill(9),
})

describe('secret cipher (ECIES, the light client format)', () => {
  test('derives the AES key as eciesjs does (HKDF-SHA256 of ephemeral key || shared point)', () => {
    expect(bytesToHex(encapsulate(jsSecp256k1, scalar(2), jsSecp256k1.publicKey(scalar(3))))).toBe(
      '0x6f982d63e8590c9d9b5b4c1959ff80315d772edd8f60287c9361d548d5200f82',
    )
  })

  test('lays out AES-256-GCM as eciesjs does (nonce || tag || ciphertext, 16-byte nonce)', () => {
    const data = hexToBytes('0xf3e1ba810d2c8900b11312b7c725565fec3b71e17c11dbe31484da9450edcf6c02d2ffed93b856f148b9')
    expect(new TextDecoder().decode(openAes(new Uint8Array(32), data))).toBe('helloworld')
    expect(bytesToHex(sealAes(new Uint8Array(32), data.subarray(0, 16), new TextEncoder().encode('helloworld')))).toBe(bytesToHex(data))
  })

  test('round trip: the target decrypts what was encrypted to its key', () => {
    const ciphertext = encryptSecret(jsSecp256k1, fixed())
    // ephemeral public key (65, uncompressed) || nonce (16) || tag (16) || JSON
    expect(ciphertext.slice(0, 4)).toBe('0x04')
    expect(hexToBytes(ciphertext).length).toBe(65 + 16 + 16 + JSON.stringify({ secret, amount: '100', payment_identifier: '42' }).length)
    expect(decryptSecret(jsSecp256k1, ciphertext, targetKey)).toEqual({ secret, amount: 100n, paymentId: 42n })
  })

  test('a fixed input gives a fixed ciphertext (fixture; also decrypted independently with node:crypto HKDF + AES-GCM)', () => {
    const fixture =
      '0x045cbdf0646e5db4eaa398f365f2ea7a0e3d419b7e0330e39ce92bddedcac4f9bc6aebca40ba255960a3178d6d861a54dba813d0b813fde7b5a5082628087264da09090909090909090909090909090909d57934e6db26e42d3fa218bc4a4126b37bf73c4568df91f8332b9aa427f03cca55c59a27309cd5936bb7590637c36914ef3c4b1a9aa09d8cb6181e639b86797d13502ee587c524d67055cd02c2951e8bf167a70b3c558d3b881e3a3d9715694d65e4fbbe1388d5008c5fcfd225fb0e1b35c919a1ab8c856bc938d3861fff5e79be4c0a4dfd25bc5a'
    expect(encryptSecret(jsSecp256k1, fixed())).toBe(fixture)
    expect(decryptSecret(jsSecp256k1, fixture, targetKey)).toEqual({ secret, amount: 100n, paymentId: 42n })
  })

  test('JS and WASM engines make the same ciphertext and read each other', async () => {
    const js = encryptSecret(jsSecp256k1, fixed())
    const wasm = (await loadWasmSecp256k1())!
    expect(wasm.name).toBe('wasm')
    expect(encryptSecret(wasm, fixed())).toBe(js)
    expect(decryptSecret(wasm, js, targetKey)).toEqual({ secret, amount: 100n, paymentId: 42n })
  })

  test('any tampered byte is rejected', () => {
    const bytes = hexToBytes(encryptSecret(jsSecp256k1, fixed()))
    for (const i of [0, 1, 64, 65, 80, 81, 96, bytes.length - 1]) {
      const tampered = bytes.slice()
      tampered[i]! ^= 1
      expect(decryptSecret(jsSecp256k1, bytesToHex(tampered), targetKey), `byte ${i}`).toBeUndefined()
    }
    expect(decryptSecret(jsSecp256k1, bytesToHex(bytes.subarray(0, bytes.length - 1)), targetKey)).toBeUndefined()
  })

  test('another key cannot decrypt it', () => {
    expect(decryptSecret(jsSecp256k1, encryptSecret(jsSecp256k1, fixed()), scalar(5))).toBeUndefined()
  })

  test('garbage never throws', () => {
    for (const junk of ['', '0x', '0x1234', 'hello', `0x${'00'.repeat(200)}`, `0x04${'zz'.repeat(100)}`])
      expect(decryptSecret(jsSecp256k1, junk, targetKey)).toBeUndefined()
  })

  test('payloads: numbers may be JSON numbers, payment_identifier may be absent, anything else is refused', () => {
    const seal = (payload: unknown) => {
      const eph = scalar(11)
      const ephemeralPublicKey = jsSecp256k1.publicKey(eph)
      const sealed = sealAes(encapsulate(jsSecp256k1, eph, targetPublicKey()), new Uint8Array(16), new TextEncoder().encode(JSON.stringify(payload)))
      return bytesToHex(new Uint8Array([...ephemeralPublicKey, ...sealed]))
    }
    expect(decryptSecret(jsSecp256k1, seal({ secret, amount: 5, payment_identifier: 6 }), targetKey)).toEqual({ secret, amount: 5n, paymentId: 6n })
    expect(decryptSecret(jsSecp256k1, seal({ secret, amount: '5' }), targetKey)).toEqual({ secret, amount: 5n })
    expect(decryptSecret(jsSecp256k1, seal({ secret: '0x12', amount: '5' }), targetKey)).toBeUndefined()
    expect(decryptSecret(jsSecp256k1, seal({ secret }), targetKey)).toBeUndefined()
    expect(decryptSecret(jsSecp256k1, seal({ secret, amount: '-5' }), targetKey)).toBeUndefined()
    expect(decryptSecret(jsSecp256k1, seal({ secret, amount: '5', payment_identifier: 'x' }), targetKey)).toBeUndefined()
    expect(decryptSecret(jsSecp256k1, seal([secret]), targetKey)).toBeUndefined()
  })

  test('the secret comes back lowercase whatever case it was sent in', () => {
    const upper = `0x${secret.slice(2).toUpperCase()}` as Hex
    expect(decryptSecret(jsSecp256k1, encryptSecret(jsSecp256k1, { ...fixed(), payload: { secret: upper, amount: 1n } }), targetKey)?.secret).toBe(secret)
  })
})
