import fc from 'fast-check'
import { keccak_256 } from '@noble/hashes/sha3'
import { bytesToHex } from 'viem'
import { expect, test } from 'vitest'
import { keccak256Bytes, useWasmKeccak } from '../../../src/protocol/keccak.ts'

test('the WASM Keccak loads in Node and hashes exactly as the JS one (property)', async () => {
  expect(await useWasmKeccak()).toBe('wasm')
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 20_000 }), (data) => {
      expect(bytesToHex(keccak256Bytes(data))).toBe(bytesToHex(keccak_256(data)))
    }),
    { numRuns: 200 },
  )
})
