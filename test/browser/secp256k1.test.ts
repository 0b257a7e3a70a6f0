import { keccak_256 } from '@noble/hashes/sha3'
import { bytesToHex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { expect, test } from 'vitest'
import { keccak256Hex, useWasmKeccak } from '../../src/protocol/keccak.ts'
import { secp256k1Engine, useWasmSecp256k1 } from '../../src/protocol/secp256k1.ts'
import { recoverPackedSignerSync, signPackedSync } from '../../src/protocol/signature.ts'

const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d' as const

test('the WASM secp256k1 engine loads in Chromium and signs exactly as the JS one', async () => {
  const js = signPackedSync(key, '0x0102030405')
  expect(secp256k1Engine().name).toBe('js')
  expect(await useWasmSecp256k1()).toBe('wasm')
  expect(signPackedSync(key, '0x0102030405')).toBe(js)
  expect(recoverPackedSignerSync('0x0102030405', js)).toBe(privateKeyToAddress(key))
})

test('the WASM Keccak loads in Chromium and hashes exactly as the JS one', async () => {
  const data = new Uint8Array(5000).map((_, i) => i * 7)
  expect(await useWasmKeccak()).toBe('wasm')
  expect(keccak256Hex(data)).toBe(bytesToHex(keccak_256(data)))
})
