import { beforeEach, expect, test } from 'vitest'
import { MessageTypeId } from '../../src/protocol/messageTypeId.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  ZERO,
  channelInfo,
  closeChannel,
  mineTo,
  openChannel,
  openFundedChannel,
  participantInfo,
  passSettleWindow,
  settleChannel,
  settleSide,
  signBalanceProof,
  signCounter,
  simulateTokenNetwork,
  tokenNetworkEvents,
  updateArgs,
  updateNonClosingBalanceProof,
  type ChainFixture,
  type Party,
  type SignedBalanceProof,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let A: Party, B: Party, C: Party
let channel: bigint
// A closes with B's proof; B then updates with A's proof.
let proofOfB: SignedBalanceProof
useChain(
  { channel: [100n, 50n] },
  (t) =>
    ({
      fx,
      channel,
      parties: [A, B, C],
    } = t),
)
beforeEach(async () => {
  proofOfB = await signBalanceProof(fx, B, channel, { nonce: 4n, transferred: 10n })
})

const proofOfA = (nonce = 5n, transferred = 30n) => signBalanceProof(fx, A, channel, { nonce, transferred })
const simulateUpdate = async (args: Awaited<ReturnType<typeof updateArgs>>, sender: Party = B) =>
  simulateTokenNetwork(fx, sender, 'updateNonClosingBalanceProof', args)

test("invariant 11: the non-closer stores the closer's proof on the closer's record and NonClosingBalanceProofUpdated is emitted", async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  const proof = await proofOfA()
  const receipt = await updateNonClosingBalanceProof(fx, channel, A, B, proof)
  expect(tokenNetworkEvents(receipt, 'NonClosingBalanceProofUpdated')[0]!.args).toEqual({
    channel_identifier: channel,
    closing_participant: A.address,
    nonce: 5n,
    balance_hash: proof.balanceHash,
  })
  expect(await participantInfo(fx, channel, A.address, B.address)).toMatchObject({ balanceHash: proof.balanceHash, nonce: 5n, isTheCloser: true })
  // The proof given at close stays on B's record.
  expect(await participantInfo(fx, channel, B.address, A.address)).toMatchObject({ balanceHash: proofOfB.balanceHash, nonce: 4n })
})

test('invariant 11: anyone (e.g. a monitoring service) can submit the update, several times with growing nonces', async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  await updateNonClosingBalanceProof(fx, channel, A, B, await proofOfA(5n, 30n), C)
  const newer = await proofOfA(9n, 45n)
  await updateNonClosingBalanceProof(fx, channel, A, B, newer, C)
  expect(await participantInfo(fx, channel, A.address, B.address)).toMatchObject({ balanceHash: newer.balanceHash, nonce: 9n })
})

test('invariant 11: an equal or lower nonce is refused with "TN: nonce reused"', async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  await updateNonClosingBalanceProof(fx, channel, A, B, await proofOfA(5n, 30n))
  await expectRevert(simulateUpdate(await updateArgs(fx, channel, A, B, await proofOfA(5n, 31n))), 'TN: nonce reused')
  await expectRevert(simulateUpdate(await updateArgs(fx, channel, A, B, await proofOfA(4n, 31n))), 'TN: nonce reused')
})

test('invariant 11: updates are refused on an open channel', async () => {
  await expectRevert(simulateUpdate(await updateArgs(fx, channel, A, B, await proofOfA())), 'TN/update: channel not closed')
})

test('invariant 11: a zero balance hash or a zero nonce is refused', async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  const proof = await proofOfA()
  const args = await updateArgs(fx, channel, A, B, proof)
  await expectRevert(simulateUpdate([args[0], args[1], args[2], ZERO, args[4], args[5], args[6], args[7]]), 'TN/update: balance hash is zero')
  await expectRevert(simulateUpdate([args[0], args[1], args[2], args[3], 0n, args[5], args[6], args[7]]), 'TN/update: nonce is zero')
  // The empty balance (nothing transferred or locked) hashes to zero, so it can never be submitted.
  const empty = await signBalanceProof(fx, A, channel, { nonce: 6n })
  expect(empty.balanceHash).toBe(ZERO)
  await expectRevert(simulateUpdate(await updateArgs(fx, channel, A, B, empty)), 'TN/update: balance hash is zero')
})

test('an update naming the wrong pair, or for a settled channel, is "channel id mismatch"', async () => {
  await openChannel(fx, A, C)
  await closeChannel(fx, channel, A, B, proofOfB)
  const proof = await proofOfA()
  const args = await updateArgs(fx, channel, A, B, proof)
  await expectRevert(simulateUpdate([args[0], A.address, C.address, args[3], args[4], args[5], args[6], args[7]]), 'TN/update: channel id mismatch')
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A), settleSide(B, proofOfB))
  await expectRevert(simulateUpdate(args), 'TN/update: channel id mismatch')
})

test("invariant 11: the non-closer's counter-signature (type 2) and the closer's proof signature are both checked", async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  const proof = await proofOfA()
  const args = await updateArgs(fx, channel, A, B, proof)
  const [id, closing, nonClosing, bh, nonce, ah] = args
  // Counter-signed by a stranger, or with the close type (1) instead of the update type (2).
  const byStranger = await signCounter(C, MessageTypeId.BalanceProofUpdate, proof, proof.signature)
  await expectRevert(simulateUpdate([id, closing, nonClosing, bh, nonce, ah, proof.signature, byStranger]), 'TN/update: invalid non-closing sig')
  const closeType = await signCounter(B, MessageTypeId.BalanceProof, proof, proof.signature)
  await expectRevert(simulateUpdate([id, closing, nonClosing, bh, nonce, ah, proof.signature, closeType]), 'TN/update: invalid non-closing sig')
  // A proof signed by someone other than the closer, properly counter-signed by B.
  const forged = await signBalanceProof(fx, C, channel, { nonce: 5n, transferred: 30n })
  await expectRevert(simulateUpdate(await updateArgs(fx, channel, A, B, forged)), 'TN/update: invalid closing sig')
  // The two signatures swapped.
  await expectRevert(simulateUpdate([id, closing, nonClosing, bh, nonce, ah, args[7], args[6]]), 'TN/update: invalid non-closing sig')
})

test('invariant 11: the closer cannot use update to replace the proof its partner was given at close', async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  // A presents an older proof of B as if B were the closer: signatures check out, but B did not close.
  const olderOfB = await signBalanceProof(fx, B, channel, { nonce: 5n, transferred: 1n })
  const args = await updateArgs(fx, channel, B, A, olderOfB)
  await expectRevert(simulateUpdate(args, A), 'TN/update: incorrect signature order')
})

test('invariant 11: the update is still accepted after the settle window, until someone settles', async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  const { settleBlockNumber } = await channelInfo(fx, channel, A.address, B.address)
  await mineTo(fx, settleBlockNumber + 20n)
  await updateNonClosingBalanceProof(fx, channel, A, B, await proofOfA())
  expect((await participantInfo(fx, channel, A.address, B.address)).nonce).toBe(5n)
})

test("invariant 9: an update signed for a channel is refused on the pair's reopened channel", async () => {
  await closeChannel(fx, channel, A, B, proofOfB)
  const oldArgs = await updateArgs(fx, channel, A, B, await proofOfA())
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A), settleSide(B, proofOfB))

  const reopened = await openFundedChannel(fx, A, B, 100n, 50n)
  await closeChannel(fx, reopened, A, B, await signBalanceProof(fx, B, reopened, { nonce: 1n, transferred: 1n }))
  const [, ...rest] = oldArgs
  await expectRevert(simulateUpdate([reopened, ...rest]), 'TN/update: invalid non-closing sig')
})
