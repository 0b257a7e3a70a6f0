import { keccak_256 } from '@noble/hashes/sha3'
import { bytesToHex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { expect, test } from 'vitest'
import { loadWasmSecp256k1 } from '../../src/crypto/curveEngines.ts'
import { keccak256Hex, useWasmKeccak } from '../../src/protocol/keccak.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'
import { recoverPackedSignerSync, signPackedSync } from '../../src/protocol/signature.ts'

const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const

test('the WASM secp256k1 engine loads in Chromium and signs exactly as the JS one', async () => {
  const js = signPackedSync(jsSecp256k1, key, '0x0102030405')
  const wasm = await loadWasmSecp256k1()
  expect(wasm?.name).toBe('wasm')
  expect(signPackedSync(wasm!, key, '0x0102030405')).toBe(js)
  expect(recoverPackedSignerSync(wasm!, '0x0102030405', js)).toBe(privateKeyToAddress(key))
})

test('the WASM Keccak loads in Chromium and hashes exactly as the JS one', async () => {
  const data = new Uint8Array(5000).map((_, i) => i * 7)
  expect(await useWasmKeccak()).toBe('wasm')
  expect(keccak256Hex(data)).toBe(bytesToHex(keccak_256(data)))
})
