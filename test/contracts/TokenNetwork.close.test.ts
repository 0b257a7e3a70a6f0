import { keccak256, toHex } from 'viem'
import { expect, test } from 'vitest'
import { MessageTypeId } from '../../src/protocol/messageTypeId.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import {
  ChannelState,
  DEFAULT_SETTLE_TIMEOUT,
  EMPTY_SIGNATURE,
  ZERO,
  channelInfo,
  closeArgs,
  closeChannel,
  openChannel,
  openFundedChannel,
  participantInfo,
  passSettleWindow,
  sendTokenNetwork,
  settleChannel,
  settleSide,
  signBalanceProof,
  signCounter,
  simulateTokenNetwork,
  tokenNetworkEvents,
  type ChainFixture,
  type Party,
} from '../support/tokenNetwork.ts'

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

const proofOfB = (nonce = 3n, transferred = 20n) => signBalanceProof(fx, B, channel, { nonce, transferred })

test("invariant 10: closing with the partner's proof stores it on the partner, marks the closer and starts the settle window", async () => {
  const proof = await proofOfB()
  const receipt = await closeChannel(fx, channel, A, B, proof)
  expect(tokenNetworkEvents(receipt, 'ChannelClosed')[0]!.args).toEqual({
    channel_identifier: channel,
    closing_participant: A.address,
    nonce: 3n,
    balance_hash: proof.balanceHash,
  })
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({
    settleBlockNumber: receipt.blockNumber + DEFAULT_SETTLE_TIMEOUT,
    state: ChannelState.Closed,
  })
  const closer = await participantInfo(fx, channel, A.address, B.address)
  const partner = await participantInfo(fx, channel, B.address, A.address)
  expect(closer).toMatchObject({ isTheCloser: true, balanceHash: ZERO, nonce: 0n, deposit: 100n })
  expect(partner).toMatchObject({ isTheCloser: false, balanceHash: proof.balanceHash, nonce: 3n, deposit: 50n })
})

test('invariant 10: either participant can close', async () => {
  const proof = await signBalanceProof(fx, A, channel, { nonce: 1n, transferred: 5n })
  await closeChannel(fx, channel, B, A, proof)
  expect((await participantInfo(fx, channel, B.address, A.address)).isTheCloser).toBe(true)
  expect((await participantInfo(fx, channel, A.address, B.address)).nonce).toBe(1n)
})

test('a third party can submit the close; the closer is the one who counter-signed', async () => {
  const receipt = await closeChannel(fx, channel, A, B, await proofOfB(), C)
  expect(tokenNetworkEvents(receipt, 'ChannelClosed')[0]!.args.closing_participant).toBe(A.address)
  expect((await participantInfo(fx, channel, A.address, B.address)).isTheCloser).toBe(true)
})

test('invariant 10: a channel closes only once, by either side', async () => {
  await closeChannel(fx, channel, A, B, await proofOfB())
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', await closeArgs(fx, channel, A, B, await proofOfB(4n))), 'TN: channel not open')
  await expectRevert(simulateTokenNetwork(fx, B, 'closeChannel', await closeArgs(fx, channel, B, A)), 'TN: channel not open')
})

test('closing an unknown channel id is refused', async () => {
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', await closeArgs(fx, channel + 7n, A, B)), 'TN: channel not open')
})

test('a close naming the wrong partner is refused', async () => {
  await openChannel(fx, A, C)
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', await closeArgs(fx, channel, A, C)), 'TN/close: channel id mismatch')
})

test("invariant 10: the closer's counter-signature is checked, and with nonce 0 too", async () => {
  const proof = await proofOfB()
  const args = await closeArgs(fx, channel, A, B, proof)
  // C counter-signs instead of A.
  const byStranger = await signCounter(C, MessageTypeId.BalanceProof, proof, proof.signature)
  await expectRevert(
    simulateTokenNetwork(fx, C, 'closeChannel', [args[0], args[1], args[2], args[3], args[4], args[5], args[6], byStranger]),
    'TN/close: invalid closing sig',
  )
  // B's own balance proof signature is not a counter-signature by A.
  await expectRevert(
    simulateTokenNetwork(fx, A, 'closeChannel', [args[0], args[1], args[2], args[3], args[4], args[5], args[6], proof.signature]),
    'TN/close: invalid closing sig',
  )
  // Nonce 0: still A must have signed.
  const empty = await closeArgs(fx, channel, A, B)
  const strangerEmpty = await signCounter(
    C,
    MessageTypeId.BalanceProof,
    { ...fx, channelId: channel, balanceHash: ZERO, nonce: 0n, additionalHash: ZERO },
    EMPTY_SIGNATURE,
  )
  await expectRevert(
    simulateTokenNetwork(fx, A, 'closeChannel', [empty[0], empty[1], empty[2], empty[3], empty[4], empty[5], empty[6], strangerEmpty]),
    'TN/close: invalid closing sig',
  )
})

test('invariant 10: with a nonce above 0 the partner must have signed the proof', async () => {
  // The closer cannot close with a proof it signed itself, nor with a stranger's.
  for (const signer of [A, C]) {
    const forged = await signBalanceProof(fx, signer, channel, { nonce: 3n, transferred: 20n })
    await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', await closeArgs(fx, channel, A, B, forged)), 'TN/close: invalid non-closing sig')
  }
})

test('invariant 10: closing with nonce 0 stores nothing for the partner, but the event carries the given balance hash', async () => {
  const givenHash = keccak256(toHex('ignored'))
  const bp = { tokenNetwork: fx.tokenNetwork, chainId: fx.chainId, channelId: channel, balanceHash: givenHash, nonce: 0n, additionalHash: ZERO }
  const closingSignature = await signCounter(A, MessageTypeId.BalanceProof, bp, EMPTY_SIGNATURE)
  const receipt = await sendTokenNetwork(fx, A, 'closeChannel', [channel, B.address, A.address, givenHash, 0n, ZERO, EMPTY_SIGNATURE, closingSignature])
  expect(tokenNetworkEvents(receipt, 'ChannelClosed')[0]!.args).toEqual({
    channel_identifier: channel,
    closing_participant: A.address,
    nonce: 0n,
    balance_hash: givenHash,
  })
  expect(await participantInfo(fx, channel, B.address, A.address)).toMatchObject({ balanceHash: ZERO, nonce: 0n })
  expect((await participantInfo(fx, channel, A.address, B.address)).isTheCloser).toBe(true)
})

test("invariant 9: a close signed for a channel is refused on the pair's reopened channel", async () => {
  const proof = await proofOfB()
  const oldArgs = await closeArgs(fx, channel, A, B, proof)
  await closeChannel(fx, channel, A, B, proof)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A), settleSide(B, proof))
  const reopened = await openFundedChannel(fx, A, B, 100n, 50n)
  const [, ...rest] = oldArgs
  await expectRevert(simulateTokenNetwork(fx, A, 'closeChannel', [reopened, ...rest]), 'TN/close: invalid closing sig')
})
