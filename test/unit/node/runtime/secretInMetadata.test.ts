import { bytesToHex, hexToBytes, sha256, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { beforeAll, describe, expect, test } from 'vitest'
import { secretForTarget, secretFromMetadata } from '../../../../src/node/runtime/secretInMetadata.ts'
import type { LockedTransfer, Signed } from '../../../../src/protocol/messages/types.ts'
import { wasmOrJsSecp256k1 } from '../../../../src/crypto/curveEngines.ts'
import type { Secp256k1Engine } from '../../../../src/protocol/secp256k1.ts'

const targetKey = `0x${'42'.repeat(32)}` as Hex
const target = privateKeyToAddress(targetKey)
const secret = sha256('0x01')
let targetPublicKey: Hex
let curve: Secp256k1Engine

beforeAll(async () => {
  curve = await wasmOrJsSecp256k1()
  // x || y, as recovered from a signature
  targetPublicKey = bytesToHex(curve.publicKey(hexToBytes(targetKey)).slice(1))
})

const transfer = (metadataSecret: Hex | undefined, to = target) =>
  ({ type: 'LockedTransfer', target: to, metadata: { routes: [], ...(metadataSecret ? { secret: metadataSecret } : {}) } }) as unknown as Signed<LockedTransfer>

describe('the secret in the LockedTransfer metadata, the shell side', () => {
  test('encrypted to the target, it opens with the target key only', () => {
    const ciphertext = secretForTarget({ curve: curve, enabled: true, targetPublicKey, secret, amount: 10n, paymentId: 7n })!
    expect(ciphertext).toMatch(/^0x[0-9a-f]+$/)
    expect(secretFromMetadata(curve, transfer(ciphertext), target, hexToBytes(targetKey))).toEqual({ secret, amount: 10n, paymentId: 7n })
    expect(secretFromMetadata(curve, transfer(ciphertext), target, hexToBytes(`0x${'43'.repeat(32)}`))).toBeUndefined()
  })

  test('nothing is encrypted when turned off, without the key, or without a secret', () => {
    expect(secretForTarget({ curve: curve, enabled: false, targetPublicKey, secret, amount: 1n, paymentId: 1n })).toBeUndefined()
    expect(secretForTarget({ curve: curve, enabled: true, targetPublicKey: undefined, secret, amount: 1n, paymentId: 1n })).toBeUndefined()
    expect(secretForTarget({ curve: curve, enabled: true, targetPublicKey, secret: undefined, amount: 1n, paymentId: 1n })).toBeUndefined()
  })

  test('a transfer to someone else, or with no secret, gives nothing to decrypt', () => {
    const ciphertext = secretForTarget({ curve: curve, enabled: true, targetPublicKey, secret, amount: 10n, paymentId: 7n })!
    expect(secretFromMetadata(curve, transfer(ciphertext, '0x00000000000000000000000000000000000000cc'), target, hexToBytes(targetKey))).toBeUndefined()
    expect(secretFromMetadata(curve, transfer(undefined), target, hexToBytes(targetKey))).toBeUndefined()
  })

  test('fresh randomness each time: two encryptions of one secret differ', () => {
    const a = secretForTarget({ curve: curve, enabled: true, targetPublicKey, secret, amount: 10n, paymentId: 7n })
    const b = secretForTarget({ curve: curve, enabled: true, targetPublicKey, secret, amount: 10n, paymentId: 7n })
    expect(a).not.toBe(b)
  })
})
