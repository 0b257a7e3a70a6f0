import fc from 'fast-check'
import { bytesToHex, getAddress, hexToBytes, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { packBalanceProof, packBalanceProofCounter } from '../../../src/protocol/balanceProof.ts'
import {
  decodeMessage,
  encodeMessage,
  packEnvelope,
  readMessage,
  type LockedTransfer,
  type RequestMonitoring,
  type Signed,
} from '../../../src/protocol/messages/index.ts'
import { MessageTypeId } from '../../../src/protocol/messageTypeId.ts'
import {
  requestMonitoringAckId,
  requestMonitoringDelivered,
  requestMonitoringSigners,
  signedBalanceProofOf,
  signRequestMonitoring,
} from '../../../src/protocol/monitoringRequest.ts'
import { recoverPackedSigner } from '../../../src/protocol/signature.ts'
import fixture from '../../fixtures/messages/LockedTransfer.json' with { type: 'json' }
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

const transfer = readMessage(fixture.message) as Signed<LockedTransfer>
const partner = getAddress(fixture.signer)
const key = generatePrivateKey()
const requester = privateKeyToAddress(key)
const monitoringServiceContract = getAddress('0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0')
const request = () =>
  signRequestMonitoring(jsSecp256k1, key, { balanceProof: signedBalanceProofOf(transfer), monitoringServiceContract, rewardAmount: 5n * 10n ** 16n })

describe('RequestMonitoring for a received balance proof', () => {
  test("carries the partner's proof as the partner signed it: the same 212 bytes as the envelope message", async () => {
    const bp = signedBalanceProofOf(transfer)
    const packed = packBalanceProof({
      tokenNetworkAddress: bp.token_network_address,
      chainId: bp.chain_id,
      channelIdentifier: bp.channel_identifier,
      balanceHash: bp.balance_hash,
      nonce: bp.nonce,
      additionalHash: bp.additional_hash,
    })
    expect(packed).toBe(bytesToHex(packEnvelope(transfer)))
    expect(await recoverPackedSigner(jsSecp256k1, packed, bp.signature)).toBe(partner)
  })

  test('is signed by the requester twice: the type-2 counter-signature and the reward proof; the partner signed the proof', async () => {
    const r = request()
    expect(r.non_closing_participant).toBe(requester)
    expect(requestMonitoringSigners(jsSecp256k1, r)).toEqual({ closing: partner, nonClosing: requester, reward: requester })
    // The counter-signature is over exactly what updateNonClosingBalanceProof checks.
    const bp = r.balance_proof
    const counter = packBalanceProofCounter(
      MessageTypeId.BalanceProofUpdate,
      {
        tokenNetworkAddress: bp.token_network_address,
        chainId: bp.chain_id,
        channelIdentifier: bp.channel_identifier,
        balanceHash: bp.balance_hash,
        nonce: bp.nonce,
        additionalHash: bp.additional_hash,
      },
      bp.signature,
    )
    expect(await recoverPackedSigner(jsSecp256k1, counter, r.non_closing_signature)).toBe(requester)
    // On the wire its signer is the reward proof's.
    expect((await decodeMessage(jsSecp256k1, encodeMessage(r))).signer).toBe(requester)
  })

  test('a signature that recovers no key gives no signer; one over other bytes another signer', () => {
    const r = request()
    const zero: Hex = `0x${'00'.repeat(65)}`
    expect(requestMonitoringSigners(jsSecp256k1, { ...r, signature: zero }).reward).toBeUndefined()
    expect(requestMonitoringSigners(jsSecp256k1, { ...r, non_closing_signature: zero }).nonClosing).toBeUndefined()
    expect(requestMonitoringSigners(jsSecp256k1, { ...r, balance_proof: { ...r.balance_proof, signature: zero } }).closing).toBeUndefined()
    const other = requestMonitoringSigners(jsSecp256k1, { ...r, reward_amount: r.reward_amount + 1n })
    expect(other.reward).not.toBe(requester)
    expect(other.nonClosing).toBe(requester)
  })
})

describe('the acknowledgement id', () => {
  test('is a uint64 the same for a resend (the same request through the wire) and in the Delivered', async () => {
    const r = request()
    const again = (await decodeMessage(jsSecp256k1, encodeMessage(r))).message as Signed<RequestMonitoring>
    expect(requestMonitoringAckId(again)).toBe(requestMonitoringAckId(r))
    expect(requestMonitoringAckId(r)).toBeLessThan(2n ** 64n)
    expect(requestMonitoringDelivered(r)).toEqual({ type: 'Delivered', delivered_message_identifier: requestMonitoringAckId(r) })
  })

  test('differs when anything it covers changes: the reward proof (reward, contract, counter-signature) or its signature', () => {
    const r = request()
    const id = requestMonitoringAckId(r)
    const flip = (hex: Hex, at: number): Hex => {
      const bytes = hexToBytes(hex)
      bytes[at % bytes.length]! ^= 1 << (at % 8)
      return bytesToHex(bytes)
    }
    fc.assert(
      fc.property(fc.nat(), fc.constantFrom('reward', 'contract', 'non_closing_signature', 'signature'), (at, field) => {
        const changed: Signed<RequestMonitoring> =
          field === 'reward'
            ? { ...r, reward_amount: r.reward_amount + BigInt(at) + 1n }
            : field === 'contract'
              ? { ...r, monitoring_service_contract_address: getAddress(flip(r.monitoring_service_contract_address, at)) }
              : field === 'non_closing_signature'
                ? { ...r, non_closing_signature: flip(r.non_closing_signature, at) }
                : { ...r, signature: flip(r.signature, at) }
        expect(requestMonitoringAckId(changed)).not.toBe(id)
      }),
    )
    // The balance proof is covered through the counter-signature: another proof, signed anew, is another id.
    const next = signRequestMonitoring(jsSecp256k1, key, {
      balanceProof: { ...r.balance_proof, nonce: r.balance_proof.nonce + 1n },
      monitoringServiceContract,
      rewardAmount: r.reward_amount,
    })
    expect(requestMonitoringAckId(next)).not.toBe(id)
  })
})
