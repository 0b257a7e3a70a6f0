import { bytesToHex, concat, hexToBigInt, keccak256, slice } from 'viem'
import { describe, expect, test } from 'vitest'
import { packMessage } from '../../../src/protocol/messages/pack.ts'
import { pfsUpdateAckId } from '../../../src/protocol/pfsUpdateAck.ts'
import { serviceAckId } from '../../../src/protocol/serviceAckId.ts'
import { signCapacityUpdate, TEST_CHAIN_ID, TEST_TOKEN_NETWORK, testNodes } from '../../support/pathfinding.ts'

const [a, b] = testNodes(2)
const update = (nonce: bigint) =>
  signCapacityUpdate(a!.key, {
    canonical_identifier: { chain_identifier: TEST_CHAIN_ID, token_network_address: TEST_TOKEN_NETWORK, channel_identifier: 1n },
    updating_participant: a!.address,
    other_participant: b!.address,
    updating_nonce: nonce,
    other_nonce: 0n,
    updating_capacity: 100n,
    other_capacity: 100n,
    reveal_timeout: 50n,
  })

describe("a service's acknowledgement id", () => {
  test("is the first 8 bytes of keccak256(the signed bytes || the signature), as viem computes it; a resend's is the same, another update's another", () => {
    const signed = update(1n)
    expect(serviceAckId(signed)).toBe(hexToBigInt(slice(keccak256(concat([bytesToHex(packMessage(signed)), signed.signature])), 0, 8)))
    expect(pfsUpdateAckId(structuredClone(signed))).toBe(serviceAckId(signed))
    expect(serviceAckId(update(2n))).not.toBe(serviceAckId(signed))
  })
})
