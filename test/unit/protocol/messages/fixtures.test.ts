import { readdirSync, readFileSync } from 'node:fs'
import { bytesToHex } from 'viem'
import { describe, expect, test } from 'vitest'
import { decodeMessage, encodeMessage, packMessage, readMessage, signMessage, toWire } from '../../../../src/protocol/messages/index.ts'
import type { ChannelSync, Signed } from '../../../../src/protocol/messages/types.ts'
import { FIXTURE_KEY } from '../../../fixtures/messages/key.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const dir = new URL('../../../fixtures/messages/', import.meta.url)
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ name: f.replace('.json', ''), ...JSON.parse(readFileSync(new URL(f, dir), 'utf8')) }))

describe('pinned message fixtures', () => {
  test("cover all sixteen message types (Raiden's fourteen and the channel sync pair of docs/decisions/0034)", () => {
    expect(fixtures.map((f) => f.name).sort()).toEqual(
      [
        'ChannelSync',
        'ChannelSyncRequest',
        'Delivered',
        'LockExpired',
        'LockedTransfer',
        'PFSCapacityUpdate',
        'PFSFeeUpdate',
        'Processed',
        'RefundTransfer',
        'RequestMonitoring',
        'RevealSecret',
        'SecretRequest',
        'Unlock',
        'WithdrawConfirmation',
        'WithdrawExpired',
        'WithdrawRequest',
      ].sort(),
    )
  })

  test("a ChannelSync's own balance proof is signed with the message, the signature its sender gave that proof", async () => {
    const fixture = fixtures.find((f) => f.name === 'ChannelSync')!
    const { signature, ...unsigned } = readMessage(fixture.message)
    if (unsigned.type !== 'ChannelSync' || !unsigned.sender_balance_proof) throw new Error('the fixture is a ChannelSync with a proof')
    const { signature: proofSignature, ...proof } = unsigned.sender_balance_proof
    const signed: Signed<ChannelSync> = await signMessage(jsSecp256k1, FIXTURE_KEY, { ...unsigned, sender_balance_proof: proof } as ChannelSync)
    expect(signed.sender_balance_proof?.signature).toBe(proofSignature)
    expect(signed.signature).toBe(signature)
  })

  describe.each(fixtures)('$name', (fixture) => {
    test('packs to the pinned signing bytes', () => {
      expect(bytesToHex(packMessage(readMessage(fixture.message)))).toBe(fixture.packed)
    })

    test('recovers the pinned signer from the wire JSON', async () => {
      const { signer } = await decodeMessage(jsSecp256k1, JSON.stringify(fixture.message), fixture.signer)
      expect(signer).toBe(fixture.signer)
    })

    test('signing the decoded fields again gives the same signature', async () => {
      const { signature, ...unsigned } = readMessage(fixture.message)
      expect((await signMessage(jsSecp256k1, FIXTURE_KEY, unsigned)).signature).toBe(signature)
    })

    test('re-encodes to the same wire JSON', () => {
      const message = readMessage(fixture.message)
      expect(toWire(message)).toEqual(fixture.message)
      expect(JSON.parse(encodeMessage(message))).toEqual(fixture.message)
    })
  })
})
