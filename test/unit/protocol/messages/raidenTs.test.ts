import { readdirSync, readFileSync } from 'node:fs'
import { bytesToHex, hexToBytes, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../../src/devnet/anvil.ts'
import { packIou } from '../../../../src/protocol/iou.ts'
import { decodeMessage, encodeMessage, messageHash, packMessage, readMessage, signMessage, toWire } from '../../../../src/protocol/messages/index.ts'
import type { EnvelopeMessage } from '../../../../src/protocol/messages/types.ts'
import { decryptSecret } from '../../../../src/protocol/secretCipher.ts'
import { recoverPackedSignerSync, signPackedSync } from '../../../../src/protocol/signature.ts'
import { nextHop } from '../../../../src/protocol/transfer/mediator.ts'
import { FIXTURE_KEY } from '../../../fixtures/messages/key.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

// Compatibility with the Raiden light client, proven by what raiden-ts itself made (scripts/raidenTsFixtures.ts,
// docs/decisions/0071-compatibility-proven-by-raiden-ts-fixtures.md): for each message it sends, our reader takes its
// wire JSON, our packing gives the bytes it signed, our signature is its signature, and what we write for the same
// message is what raiden-ts wrote and read back.

type Json = Record<string, unknown>
type Fixture = {
  name: string
  versions: Record<string, string>
  message: Json & { type: string; signature: Hex }
  signer: Address
  packed: Hex
  messageHash?: Hex
  raidenTsReadsSluice: {
    text: string
    raidenTsSigner?: Address
    raidenTsSignerWithoutImmutableMetadata?: Address
    sameFieldsAsRaidenTs?: boolean
    raidenTsError?: string
  }
}

const dir = new URL('../../../fixtures/raiden-ts/', import.meta.url)
const read = (file: string) => JSON.parse(readFileSync(new URL(file, dir), 'utf8'))
const fixtures: Fixture[] = readdirSync(dir)
  .filter((f) => f.endsWith('.json') && f !== 'IOU.json' && f !== 'notInRaidenTs.json')
  .sort()
  .map((f) => ({ name: f.replace('.json', ''), ...read(f) }))
const fixture = (name: string) => fixtures.find((f) => f.name === name)!

/** raiden-ts 3.1.1's MessageType enum (raiden-ts/src/messages/types.ts). */
const RAIDEN_TS_TYPES = [
  'Delivered',
  'Processed',
  'SecretRequest',
  'RevealSecret',
  'LockedTransfer',
  'Unlock',
  'LockExpired',
  'WithdrawRequest',
  'WithdrawConfirmation',
  'WithdrawExpired',
  'PFSCapacityUpdate',
  'PFSFeeUpdate',
  'RequestMonitoring',
]

/** Every object's keys in order, by path: where two JSON texts of the same fields list them differently. */
function keyOrders(value: unknown, path = '', out: Record<string, string[]> = {}): Record<string, string[]> {
  if (Array.isArray(value)) value.forEach((v, i) => keyOrders(v, `${path}[${i}]`, out))
  else if (value !== null && typeof value === 'object') {
    out[path || '.'] = Object.keys(value)
    for (const [k, v] of Object.entries(value)) keyOrders(v, `${path}.${k}`, out)
  }
  return out
}

function orderDifferences(ours: unknown, theirs: unknown): string[] {
  const a = keyOrders(ours)
  const b = keyOrders(theirs)
  return Object.keys(b)
    .filter((path) => a[path]?.join() !== b[path]?.join())
    .map((path) => `${path}: ours ${a[path]?.join(', ')}; raiden-ts ${b[path]?.join(', ')}`)
}

/**
 * By message type, where our JSON (the order readMessage gives, the one of our message types) lists a message's fields in another
 * order than raiden-ts's (the order its epics build them in). Harmless: both sides parse the JSON
 * into fields by name (raiden-ts's io-ts codecs, Python Raiden's marshmallow schemas, our readMessage), signatures
 * are over the packed bytes (never the JSON text), and the one hash over JSON, the metadata's, is over its canonical
 * (key-sorted) form of metadata we keep as received. The fixtures below show raiden-ts reading ours.
 */
const KNOWN_ORDER_DIFFERENCES: Record<string, string[]> = {
  SecretRequest: [
    '.: ours type, message_identifier, payment_identifier, secrethash, amount, expiration, signature; raiden-ts type, payment_identifier, secrethash, amount, expiration, message_identifier, signature',
  ],
  PFSFeeUpdate: [
    '.: ours type, canonical_identifier, updating_participant, fee_schedule, timestamp, signature; raiden-ts type, canonical_identifier, updating_participant, timestamp, fee_schedule, signature',
  ],
  RequestMonitoring: [
    '.: ours type, balance_proof, monitoring_service_contract_address, non_closing_participant, non_closing_signature, reward_amount, signature; raiden-ts type, balance_proof, non_closing_participant, non_closing_signature, monitoring_service_contract_address, reward_amount, signature',
  ],
}

describe('messages made by raiden-ts (the Raiden light client)', () => {
  test('cover every message type raiden-ts has; ours beyond them are RefundTransfer and the channel sync pair', () => {
    const types = new Set(fixtures.map((f) => f.message.type))
    expect([...types].sort()).toEqual([...RAIDEN_TS_TYPES].sort())
    expect(fixtures.every((f) => f.versions['raiden-ts'] === '3.1.1')).toBe(true)
    // RefundTransfer is Python Raiden's (raiden-ts neither sends nor takes one: docs/protocol.md §3.9);
    // ChannelSyncRequest and ChannelSync are Sluice's own (docs/decisions/0034).
    const ours = readdirSync(new URL('../../../fixtures/messages/', import.meta.url))
      .filter((f) => f.endsWith('.json'))
      .map((f) => f.replace('.json', ''))
    expect(ours.filter((t) => !types.has(t)).sort()).toEqual(['ChannelSync', 'ChannelSyncRequest', 'RefundTransfer'])
  })

  test('raiden-ts drops the messages of ours it does not have, unanswered, as an unknown type', () => {
    const { refused } = read('notInRaidenTs.json')
    expect(refused).toEqual({
      ChannelSync: 'RaidenError: Invalid message type: ChannelSync',
      ChannelSyncRequest: 'RaidenError: Invalid message type: ChannelSyncRequest',
      RefundTransfer: 'RaidenError: Invalid message type: RefundTransfer',
    })
  })

  describe.each(fixtures)('$name', (f) => {
    test("our reader accepts raiden-ts's wire JSON and recovers its signer", async () => {
      const { message, signer } = await decodeMessage(jsSecp256k1, JSON.stringify(f.message), f.signer)
      expect(signer).toBe(f.signer)
      expect(message.type).toBe(f.message.type)
    })

    test('our packing gives the bytes raiden-ts signed', () => {
      const message = readMessage(f.message)
      expect(bytesToHex(packMessage(message))).toBe(f.packed)
      if (f.messageHash) expect(messageHash(message as EnvelopeMessage)).toBe(f.messageHash)
    })

    test("our signature is raiden-ts's signature", async () => {
      const { signature, ...unsigned } = readMessage(f.message)
      expect(signature).toBe(f.message.signature)
      expect((await signMessage(jsSecp256k1, FIXTURE_KEY, unsigned)).signature).toBe(f.message.signature)
    })

    test("we write the same fields with raiden-ts's names and JSON types (decimal strings, checksummed addresses)", () => {
      const ours = toWire(readMessage(f.message))
      expect(ours).toStrictEqual(f.message)
      expect(orderDifferences(ours, f.message)).toEqual(KNOWN_ORDER_DIFFERENCES[f.message.type] ?? [])
    })

    test('raiden-ts read what we write as the message it sent, signed by the same key', async () => {
      const { signature: _, ...unsigned } = readMessage(f.message)
      // The text raiden-ts was given when the fixture was made is still what we write...
      expect(encodeMessage(await signMessage(jsSecp256k1, FIXTURE_KEY, unsigned))).toBe(f.raidenTsReadsSluice.text)
      // ...and raiden-ts decoded it to its own message, with our signer (whether or not the peer keeps metadata as is).
      expect(f.raidenTsReadsSluice.raidenTsError).toBeUndefined()
      expect(f.raidenTsReadsSluice.sameFieldsAsRaidenTs).toBe(true)
      expect(f.raidenTsReadsSluice.raidenTsSigner).toBe(f.signer)
      expect(f.raidenTsReadsSluice.raidenTsSignerWithoutImmutableMetadata).toBe(f.signer)
    })
  })

  test('a raiden-ts LockedTransfer: we forward it along its route and, as its target, read the secret it encrypted', () => {
    const transfer = readMessage(fixture('LockedTransfer').message)
    if (transfer.type !== 'LockedTransfer') throw new Error('the fixture is a LockedTransfer')
    // raiden-ts's route starts at the initiator itself.
    expect(nextHop(transfer, transfer.recipient)).toBe(transfer.target)
    const targetKey = anvilKeys[2]
    expect(privateKeyToAddress(targetKey)).toBe(transfer.target)
    const reveal = readMessage(fixture('RevealSecret').message)
    if (reveal.type !== 'RevealSecret') throw new Error('the fixture is a RevealSecret')
    expect(decryptSecret(jsSecp256k1, transfer.metadata.secret as string, hexToBytes(targetKey))).toEqual({
      secret: reveal.secret,
      amount: transfer.lock.amount,
      paymentId: transfer.payment_identifier,
    })
  })

  test("the IOU: packIou gives the bytes raiden-ts signs to pay a pathfinding service, and our signature is raiden-ts's", () => {
    const { iou, signer, packed, versions } = read('IOU.json')
    expect(versions['raiden-ts']).toBe('3.1.1')
    const ours = packIou({
      oneToNAddress: iou.one_to_n_address,
      chainId: BigInt(iou.chain_id),
      sender: iou.sender,
      receiver: iou.receiver,
      amount: BigInt(iou.amount),
      // raiden-ts's claimable_until (contracts 0.50, seconds) is our expiration_block (0.40): the same uint256 slot.
      expirationBlock: BigInt(iou.claimable_until),
    })
    expect(ours).toBe(packed)
    expect(signPackedSync(jsSecp256k1, FIXTURE_KEY, ours)).toBe(iou.signature)
    expect(recoverPackedSignerSync(jsSecp256k1, ours, iou.signature)).toBe(signer)
    expect(iou.sender).toBe(signer)
  })
})
