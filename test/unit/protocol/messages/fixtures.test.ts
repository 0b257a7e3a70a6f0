import { readdirSync, readFileSync } from 'node:fs'
import { bytesToHex } from 'viem'
import { describe, expect, test } from 'vitest'
import { decodeMessage, encodeMessage, packMessage, readMessage, signMessage, toWire } from '../../../../src/protocol/messages/index.ts'
import { FIXTURE_KEY } from '../../../fixtures/messages/key.ts'

const dir = new URL('../../../fixtures/messages/', import.meta.url)
const fixtures = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ name: f.replace('.json', ''), ...JSON.parse(readFileSync(new URL(f, dir), 'utf8')) }))

describe('pinned message fixtures', () => {
  test('cover all fourteen message types', () => {
    expect(fixtures.map((f) => f.name).sort()).toEqual(
      [
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

  describe.each(fixtures)('$name', (fixture) => {
    test('packs to the pinned signing bytes', () => {
      expect(bytesToHex(packMessage(readMessage(fixture.message)))).toBe(fixture.packed)
    })

    test('recovers the pinned signer from the wire JSON', async () => {
      const { signer } = await decodeMessage(JSON.stringify(fixture.message), fixture.signer)
      expect(signer).toBe(fixture.signer)
    })

    test('signing the decoded fields again gives the same signature', async () => {
      const { signature, ...unsigned } = readMessage(fixture.message)
      expect((await signMessage(FIXTURE_KEY, unsigned)).signature).toBe(signature)
    })

    test('re-encodes to the same wire JSON', () => {
      const message = readMessage(fixture.message)
      expect(toWire(message)).toEqual(fixture.message)
      expect(JSON.parse(encodeMessage(message))).toEqual(fixture.message)
    })
  })
})
