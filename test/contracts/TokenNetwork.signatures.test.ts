// The docs/protocol.md §2 byte layouts signed in TypeScript are the ones the contract verifies, and a signature is bound to every
// field: signing any other bytes makes the contract refuse it. Also ECVerify's handling of v and lengths.
import { concatHex, keccak256, size, toHex, type Hex } from 'viem'
import { serializeSignature, sign } from 'viem/accounts'
import { expect, test } from 'vitest'
import { balanceHash, packBalanceProof, packBalanceProofCounter } from '../../src/protocol/balanceProof.ts'
import { LOCKSROOT_OF_NO_LOCKS } from '../../src/protocol/locks.ts'
import { MessageTypeId } from '../../src/protocol/messageTypeId.ts'
import { recoverPackedSigner, signPacked } from '../../src/protocol/signature.ts'
import { packWithdraw } from '../../src/protocol/withdrawProof.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  EMPTY_SIGNATURE,
  ZERO,
  closeArgs,
  closeChannel,
  participantInfo,
  sendTokenNetwork,
  signBalanceProof,
  signCounter,
  signWithdraw,
  simulateTokenNetwork,
  updateArgs,
  withV,
  withdrawInput,
  type ChainFixture,
  type Party,
  type BalanceProofData,
  type ProofDomain,
  type SignedBalanceProof,
} from '../support/tokenNetwork.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

let fx: ChainFixture
let A: Party, B: Party, C: Party
let channel: bigint
useChain(
  { channel: [100n, 50n] },
  (t) =>
    ({
      fx,
      channel,
      parties: [A, B, C],
    } = t),
)

const OTHER_HASH = keccak256(toHex('something else'))
const data = { nonce: 5n, transferred: 20n, locked: 3n, locksroot: keccak256(toHex('locks')), additionalHash: keccak256(toHex('message')) }

test('the packed messages have the lengths the contract hard-codes (212, 277, 200 bytes) and recover to their signer', async () => {
  const bp = { tokenNetworkAddress: fx.tokenNetwork, chainId: fx.chainId, channelIdentifier: channel, balanceHash: OTHER_HASH, nonce: 1n, additionalHash: ZERO }
  const packed = packBalanceProof(bp)
  expect(size(packed)).toBe(212)
  const signature = await signPacked(jsSecp256k1, A.key, packed)
  expect(size(signature)).toBe(65)
  expect(await recoverPackedSigner(jsSecp256k1, packed, signature)).toBe(A.address)
  expect(size(packBalanceProofCounter(MessageTypeId.BalanceProof, bp, signature))).toBe(277)
  expect(
    size(
      packWithdraw({
        tokenNetworkAddress: fx.tokenNetwork,
        chainId: fx.chainId,
        channelIdentifier: channel,
        participant: A.address,
        totalWithdraw: 1n,
        expiration: 2n,
      }),
    ),
  ).toBe(200)
  // The empty balance hashes to zero (docs/protocol.md §2.2); anything else is keccak(T || L || locksroot).
  expect(balanceHash({ transferredAmount: 0n, lockedAmount: 0n, locksroot: LOCKSROOT_OF_NO_LOCKS })).toBe(ZERO)
})

test('a balance proof signed in TypeScript closes the channel and is stored as signed', async () => {
  const proof = await signBalanceProof(fx, B, channel, data)
  await closeChannel(fx, channel, A, B, proof)
  expect(await participantInfo(fx, channel, B.address, A.address)).toMatchObject({ balanceHash: proof.balanceHash, nonce: 5n })
})

const DEAD = '0x000000000000000000000000000000000000dEaD' as const
/** One field of a balance proof changed: the domain (where it is valid) or the signed data. */
const proofFlips: Array<[string, { domain?: Partial<ProofDomain>; data?: Partial<BalanceProofData> }]> = [
  ['another channel id', { domain: { channelId: 999n } }],
  ['another chain id', { domain: { chainId: 1n } }],
  ['another token network', { domain: { tokenNetwork: DEAD } }],
  ['another nonce', { data: { nonce: 6n } }],
  ['another balance hash', { data: { transferred: 21n } }],
  ['another additional hash', { data: { additionalHash: OTHER_HASH } }],
]

/** `signer`'s signature over the proof `base` with one field changed, attached to the real (unchanged) proof. */
async function signedOverOther(
  signer: Party,
  base: BalanceProofData,
  flip: { domain?: Partial<ProofDomain>; data?: Partial<BalanceProofData> },
): Promise<SignedBalanceProof> {
  const real = await signBalanceProof(fx, signer, channel, base)
  const other = await signBalanceProof(fx, signer, channel, { ...base, ...flip.data }, flip.domain)
  return { ...real, signature: other.signature }
}

test.each(proofFlips)('a balance proof signature over %s is refused at close ("invalid non-closing sig")', async (_what, flip) => {
  const forged = await signedOverOther(B, data, flip)
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', await closeArgs(fx, channel, A, B, forged)), 'TN/close: invalid non-closing sig')
})

test.each(proofFlips)('a closer\'s balance proof signature over %s is refused at update ("invalid closing sig")', async (_what, flip) => {
  await closeChannel(fx, channel, A, B, await signBalanceProof(fx, B, channel, data))
  // B counter-signs what is submitted (the real fields with A's signature over other bytes): only A's signature is wrong.
  const forged = await signedOverOther(A, { ...data, nonce: 9n }, flip)
  await expectRevert(simulateTokenNetwork(fx, B, 'updateNonClosingBalanceProof', await updateArgs(fx, channel, A, B, forged)), 'TN/update: invalid closing sig')
})

type CounterFields = { tokenNetwork: Hex; chainId: bigint; channelId: bigint; balanceHash: Hex; nonce: bigint; additionalHash: Hex }
const counterFlips: Array<[string, Partial<CounterFields>]> = [
  ['another channel id', { channelId: 999n }],
  ['another chain id', { chainId: 1n }],
  ['another token network', { tokenNetwork: DEAD }],
  ['another nonce', { nonce: 6n }],
  ['another balance hash', { balanceHash: OTHER_HASH }],
  ['another additional hash', { additionalHash: OTHER_HASH }],
]

test.each(counterFlips)('a close counter-signature over %s is refused ("invalid closing sig")', async (_what, change) => {
  const proof = await signBalanceProof(fx, B, channel, data)
  const args = await closeArgs(fx, channel, A, B, proof)
  const forged = await signCounter(A, MessageTypeId.BalanceProof, { ...proof, ...change }, proof.signature)
  await expectRevert(
    simulateTokenNetwork(fx, A, 'closeChannel', [args[0], args[1], args[2], args[3], args[4], args[5], args[6], forged]),
    'TN/close: invalid closing sig',
  )
  await simulateTokenNetwork(fx, A, 'closeChannel', args)
})

test.each(counterFlips)('an update counter-signature over %s is refused ("invalid non-closing sig")', async (_what, change) => {
  await closeChannel(fx, channel, A, B, await signBalanceProof(fx, B, channel, data))
  const proofOfA = await signBalanceProof(fx, A, channel, { ...data, nonce: 9n })
  const args = await updateArgs(fx, channel, A, B, proofOfA)
  const forged = await signCounter(B, MessageTypeId.BalanceProofUpdate, { ...proofOfA, ...change }, proofOfA.signature)
  await expectRevert(
    simulateTokenNetwork(fx, B, 'updateNonClosingBalanceProof', [args[0], args[1], args[2], args[3], args[4], args[5], args[6], forged]),
    'TN/update: invalid non-closing sig',
  )
  await simulateTokenNetwork(fx, B, 'updateNonClosingBalanceProof', args)
})

test('the close counter-signature must be of type BalanceProof (1), over this proof and its signature', async () => {
  const proof = await signBalanceProof(fx, B, channel, data)
  const args = await closeArgs(fx, channel, A, B, proof)
  const withClosing = (sig: Hex) => [args[0], args[1], args[2], args[3], args[4], args[5], args[6], sig] as const
  const updateType = await signCounter(A, MessageTypeId.BalanceProofUpdate, proof, proof.signature)
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', withClosing(updateType)), 'TN/close: invalid closing sig')
  const otherSig = await signCounter(A, MessageTypeId.BalanceProof, proof, EMPTY_SIGNATURE)
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', withClosing(otherSig)), 'TN/close: invalid closing sig')
  const otherChain = await signCounter(A, MessageTypeId.BalanceProof, { ...proof, chainId: 1n }, proof.signature)
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', withClosing(otherChain)), 'TN/close: invalid closing sig')
  // A plain balance proof signature by A over the same fields is not a counter-signature either.
  const plain = (await signBalanceProof(fx, A, channel, data)).signature
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', withClosing(plain)), 'TN/close: invalid closing sig')
  await sendTokenNetwork(fx, A, 'closeChannel', args)
})

test('the update counter-signature must be of type BalanceProofUpdate (2); the close type is refused', async () => {
  await closeChannel(fx, channel, A, B, await signBalanceProof(fx, B, channel, data))
  const proofOfA = await signBalanceProof(fx, A, channel, { ...data, nonce: 9n })
  const args = await updateArgs(fx, channel, A, B, proofOfA)
  const closeType = await signCounter(B, MessageTypeId.BalanceProof, proofOfA, proofOfA.signature)
  await expectRevert(
    simulateTokenNetwork(fx, B, 'updateNonClosingBalanceProof', [args[0], args[1], args[2], args[3], args[4], args[5], args[6], closeType]),
    'TN/update: invalid non-closing sig',
  )
  const otherNetwork = await signCounter(B, MessageTypeId.BalanceProofUpdate, { ...proofOfA, tokenNetwork: fx.token }, proofOfA.signature)
  await expectRevert(
    simulateTokenNetwork(fx, B, 'updateNonClosingBalanceProof', [args[0], args[1], args[2], args[3], args[4], args[5], args[6], otherNetwork]),
    'TN/update: invalid non-closing sig',
  )
  await sendTokenNetwork(fx, B, 'updateNonClosingBalanceProof', args)
  expect((await participantInfo(fx, channel, A.address, B.address)).nonce).toBe(9n)
})

test.each<[string, Partial<{ channelId: bigint; chainId: bigint; tokenNetwork: Hex; participant: Hex; totalWithdraw: bigint; expiration: bigint }>]>([
  ['another channel id', { channelId: 999n }],
  ['another chain id', { chainId: 1n }],
  ['another token network', { tokenNetwork: DEAD }],
  ['another participant', { participant: '0x000000000000000000000000000000000000bEEF' }],
  ['another total', { totalWithdraw: 11n }],
  ['another expiration', { expiration: 12_345n }],
])('a withdraw signature over %s is refused ("invalid participant sig")', async (_what, change) => {
  const real = await withdrawInput(fx, channel, A, B, 10n)
  const message = {
    channelId: change.channelId ?? channel,
    participant: (change.participant ?? A.address) as Hex,
    totalWithdraw: change.totalWithdraw ?? 10n,
    expiration: change.expiration ?? real.expiration_block,
  }
  const forged = await signWithdraw(fx, A, message, { chainId: change.chainId, tokenNetwork: change.tokenNetwork })
  await expectRevert(
    simulateTokenNetwork(fx, A, 'setTotalWithdraw', [channel, A.address, 10n, real.expiration_block, forged, real.partner_signature]),
    'TN/withdraw: invalid participant sig',
  )
  await simulateTokenNetwork(fx, A, 'setTotalWithdraw', [channel, A.address, 10n, real.expiration_block, real.participant_signature, real.partner_signature])
})

test('a withdraw signature is not a balance proof signature: message types keep them apart', async () => {
  // Sign the 200 withdraw bytes and try them as the closer's counter-signature: refused.
  const w = await withdrawInput(fx, channel, A, B, 10n)
  const args = await closeArgs(fx, channel, A, B)
  await expectRevert(
    simulateTokenNetwork(fx, A, 'closeChannel', [args[0], args[1], args[2], args[3], args[4], args[5], args[6], w.participant_signature]),
    'TN/close: invalid closing sig',
  )
})

/** Signs balance proofs over varying additional hashes until both recovery ids (v = 27 and 28) occurred. */
async function proofsOfBothParities(signer: Party) {
  const found = new Map<number, SignedBalanceProof>()
  for (let i = 0; found.size < 2; i++) {
    const proof = await signBalanceProof(fx, signer, channel, { ...data, additionalHash: keccak256(toHex(`parity ${i}`)) })
    const v = Number.parseInt(proof.signature.slice(-2), 16)
    if (!found.has(v)) found.set(v, proof)
  }
  return found
}

/** closeChannel arguments for B's `proof` with B's signature replaced by `bpSignature`, counter-signed by A over it. */
async function closeWithBpSignature(proof: SignedBalanceProof, bpSignature: Hex) {
  const closingSignature = await signCounter(A, MessageTypeId.BalanceProof, proof, bpSignature)
  return [channel, B.address, A.address, proof.balanceHash, proof.nonce, proof.additionalHash, bpSignature, closingSignature] as const
}

test('ECVerify accepts v as 27/28 and as 0/1 for the same signature', async () => {
  const found = await proofsOfBothParities(B)
  expect([...found.keys()].sort()).toEqual([27, 28])
  for (const [v, proof] of found) {
    // The partner's balance proof signature with v = 27/28 and with v = 0/1.
    await simulateTokenNetwork(fx, A, 'closeChannel', await closeWithBpSignature(proof, proof.signature))
    await simulateTokenNetwork(fx, A, 'closeChannel', await closeWithBpSignature(proof, withV(proof.signature, v - 27)))
    // The closer's counter-signature with v = 0/1 (whatever parity it has).
    const [id, nonCloser, closer, bh, nonce, ah, nonClosingSig, closingSig] = await closeArgs(fx, channel, A, B, proof)
    const closingV = Number.parseInt(closingSig.slice(-2), 16)
    await simulateTokenNetwork(fx, A, 'closeChannel', [id, nonCloser, closer, bh, nonce, ah, nonClosingSig, withV(closingSig, closingV - 27)])
    // The other parity recovers another key: a wrong signer, not a malformed signature.
    await expectRevert(
      simulateTokenNetwork(fx, A, 'closeChannel', await closeWithBpSignature(proof, withV(proof.signature, v === 27 ? 28 : 27))),
      'TN/close: invalid non-closing sig',
    )
  }
})

test('ECVerify reverts without a reason for a v outside {0, 1, 27, 28}', async () => {
  const proof = await signBalanceProof(fx, B, channel, data)
  const [id, nonCloser, closer, bh, nonce, ah, nonClosingSig, closingSig] = await closeArgs(fx, channel, A, B, proof)
  for (const v of [2, 26, 29, 255]) {
    await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', [id, nonCloser, closer, bh, nonce, ah, nonClosingSig, withV(closingSig, v)]), 'no reason')
    await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', await closeWithBpSignature(proof, withV(nonClosingSig, v))), 'no reason')
  }
})

test('ECVerify reverts without a reason for a signature that is not 65 bytes long', async () => {
  const proof = await signBalanceProof(fx, B, channel, data)
  const [id, nonCloser, closer, bh, nonce, ah, nonClosingSig, closingSig] = await closeArgs(fx, channel, A, B, proof)
  for (const bad of [closingSig.slice(0, -2) as Hex, concatHex([closingSig, '0x00']), '0x' as Hex]) {
    await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', [id, nonCloser, closer, bh, nonce, ah, nonClosingSig, bad]), 'no reason')
  }
  // A short balance proof signature with nonce > 0. The contract hashes the counter message with the fixed
  // length "277" whatever its real length, so the closer signs it that way; then the closing signature
  // passes and the partner's short signature is what fails, without a reason.
  const short = nonClosingSig.slice(0, -2) as Hex
  const counter = packBalanceProofCounter(
    MessageTypeId.BalanceProof,
    {
      tokenNetworkAddress: fx.tokenNetwork,
      chainId: fx.chainId,
      channelIdentifier: channel,
      balanceHash: proof.balanceHash,
      nonce: proof.nonce,
      additionalHash: proof.additionalHash,
    },
    short,
  )
  const digest = keccak256(concatHex([toHex('\x19Ethereum Signed Message:\n277'), counter]))
  const closingOverShort = serializeSignature(await sign({ hash: digest, privateKey: A.key }))
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', [id, nonCloser, closer, bh, nonce, ah, short, closingOverShort]), 'no reason')
  // And a withdraw with a 64-byte participant signature.
  const w = await withdrawInput(fx, channel, A, B, 10n)
  await expectRevert(
    simulateTokenNetwork(fx, A, 'setTotalWithdraw', [
      channel,
      A.address,
      10n,
      w.expiration_block,
      w.participant_signature.slice(0, -2) as Hex,
      w.partner_signature,
    ]),
    'no reason',
  )
})

test('ECVerify reverts without a reason when ecrecover finds no signer (r = s = 0)', async () => {
  const [id, nonCloser, closer, bh, nonce, ah, nonClosingSig] = await closeArgs(fx, channel, A, B, await signBalanceProof(fx, B, channel, data))
  await expectRevert(
    simulateTokenNetwork(fx, A, 'closeChannel', [id, nonCloser, closer, bh, nonce, ah, nonClosingSig, withV(EMPTY_SIGNATURE, 27)]),
    'no reason',
  )
})
