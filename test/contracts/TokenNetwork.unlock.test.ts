import { concatHex, type Hex } from 'viem'
import { expect, test } from 'vitest'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { encodeLock, encodeLocks, locksroot, type Lock } from '../../src/protocol/locks.ts'
import { useChain } from '../support/chainSuite.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import {
  ChannelState,
  DEFAULT_SETTLE_TIMEOUT,
  MAX_UINT256,
  SETTLE_TIMEOUT_MAX,
  SETTLE_TIMEOUT_MIN,
  ZERO,
  blockNumber,
  channelInfo,
  closeChannel,
  deployRaw,
  fakeTokenBytecode,
  mineTo,
  openChannel,
  openFundedChannel,
  participantInfo,
  passSettleWindow,
  registerSecrets,
  secretFor,
  selectors,
  sendTokenNetwork,
  settleChannel,
  settleSide,
  settledChannelWithLocks,
  signBalanceProof,
  simulateTokenNetwork,
  tokenBalance,
  tokenNetworkEvents,
  unlock,
  updateNonClosingBalanceProof,
  type ChainFixture,
  type Party,
  type SignedBalanceProof,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let A: Party, B: Party, C: Party
useChain(
  (t) =>
    ({
      fx,
      parties: [A, B, C],
    } = t),
)

const simulateUnlock = (id: bigint, receiver: Party, sender: Party, locks: Hex, caller: Party = C) =>
  simulateTokenNetwork(fx, caller, 'unlock', [id, receiver.address, sender.address, locks])

/** A -> B channel where A's proof holds `locks` (and `transferred`), closed by B, settled; secrets registered as given. */
async function settledWithLocks(locks: Lock[], options: { deposit?: bigint; transferred?: bigint; register?: Hex[] } = {}) {
  const locked = locks.reduce((s, l) => s + l.amount, 0n)
  const channel = await openFundedChannel(fx, A, B, options.deposit ?? 1000n, 0n)
  const proof = await signBalanceProof(fx, A, channel, { nonce: 1n, transferred: options.transferred ?? 0n, locked, locksroot: locksroot(locks) })
  if (options.register?.length) await registerSecrets(fx, options.register)
  await closeChannel(fx, channel, B, A, proof)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(B), settleSide(A, proof))
  return { channel, proof }
}

async function threeLocks() {
  const now = await blockNumber(fx)
  const s = ['one', 'two', 'three'].map((l) => secretFor(`unlock ${l}`))
  const locks: Lock[] = s.map((x, i) => ({ expiration: now + 100n + BigInt(i), amount: BigInt(10 * (i + 1)), secrethash: x.secrethash }))
  return { locks, secrets: s.map((x) => x.secret) }
}

test('invariant 16: unlock pays the receiver the locks whose secret was registered in time and returns the rest to the sender', async () => {
  const { locks, secrets } = await threeLocks()
  // Secrets of locks 1 and 3 registered (amounts 10 + 30), lock 2 never.
  const { channel } = await settledWithLocks(locks, { register: [secrets[0]!, secrets[2]!] })
  const aBefore = await tokenBalance(fx, A.address)
  const bBefore = await tokenBalance(fx, B.address)
  const receipt = await unlock(fx, channel, B.address, A.address, locks)
  expect(tokenNetworkEvents(receipt, 'ChannelUnlocked')[0]!.args).toEqual({
    channel_identifier: channel,
    receiver: B.address,
    sender: A.address,
    locksroot: locksroot(locks),
    unlocked_amount: 40n,
    returned_tokens: 20n,
  })
  expect(await tokenBalance(fx, B.address)).toBe(bBefore + 40n)
  expect(await tokenBalance(fx, A.address)).toBe(aBefore + 20n)
  expect(await participantInfo(fx, channel, A.address, B.address)).toMatchObject({ locksroot: ZERO, lockedAmount: 0n })
  expect((await channelInfo(fx, channel, A.address, B.address)).state).toBe(ChannelState.Removed)
})

test('anyone can call unlock; the caller receives nothing', async () => {
  const { locks, secrets } = await threeLocks()
  const { channel } = await settledWithLocks(locks, { register: secrets })
  const cBefore = await tokenBalance(fx, C.address)
  await unlock(fx, channel, B.address, A.address, locks, C)
  expect(await tokenBalance(fx, C.address)).toBe(cBefore)
})

test('invariant 16: a second unlock of the same locks fails with "locksroot mismatch"', async () => {
  const { locks, secrets } = await threeLocks()
  const { channel } = await settledWithLocks(locks, { register: secrets })
  await unlock(fx, channel, B.address, A.address, locks)
  await expectRevert(simulateUnlock(channel, B, A, encodeLocks(locks)), 'TN/unlock: locksroot mismatch')
})

test('invariant 16: with no secret registered everything returns to the sender', async () => {
  const { locks } = await threeLocks()
  const { channel } = await settledWithLocks(locks)
  const bBefore = await tokenBalance(fx, B.address)
  const receipt = await unlock(fx, channel, B.address, A.address, locks)
  expect(tokenNetworkEvents(receipt, 'ChannelUnlocked')[0]!.args).toMatchObject({ unlocked_amount: 0n, returned_tokens: 60n })
  expect(await tokenBalance(fx, B.address)).toBe(bBefore)
})

test('invariant 16: a secret registered in the block before expiration pays; in the expiration block or later it refunds', async () => {
  // docs/protocol.md §6: the Python node would accept a reveal in the expiration block; the contract (and we) do not.
  const now = await blockNumber(fx)
  const [early, atExpiry, late] = ['early', 'at expiry', 'late'].map((l) => secretFor(`timing ${l}`)) as [
    ReturnType<typeof secretFor>,
    ReturnType<typeof secretFor>,
    ReturnType<typeof secretFor>,
  ]
  const expiration = now + 20n
  const locks: Lock[] = [
    { expiration, amount: 1n, secrethash: early.secrethash },
    { expiration, amount: 2n, secrethash: atExpiry.secrethash },
    { expiration, amount: 4n, secrethash: late.secrethash },
  ]
  const channel = await openFundedChannel(fx, A, B, 100n, 0n)
  const proof = await signBalanceProof(fx, A, channel, { nonce: 1n, locked: 7n, locksroot: locksroot(locks) })
  await closeChannel(fx, channel, B, A, proof)
  await mineTo(fx, expiration - 2n)
  expect((await registerSecrets(fx, [early.secret])).blockNumber).toBe(expiration - 1n)
  expect((await registerSecrets(fx, [atExpiry.secret])).blockNumber).toBe(expiration)
  expect((await registerSecrets(fx, [late.secret])).blockNumber).toBe(expiration + 1n)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(B), settleSide(A, proof))
  const receipt = await unlock(fx, channel, B.address, A.address, locks)
  expect(tokenNetworkEvents(receipt, 'ChannelUnlocked')[0]!.args).toMatchObject({ unlocked_amount: 1n, returned_tokens: 6n })
})

test('invariant 16: only the exact ordered concatenation of the locks unlocks (reordered, partial, extra, tampered, empty all fail)', async () => {
  const { locks, secrets } = await threeLocks()
  const { channel } = await settledWithLocks(locks, { register: secrets })
  const [l1, l2, l3] = locks as [Lock, Lock, Lock]
  const wrong: Hex[] = [
    encodeLocks([l2, l1, l3]),
    encodeLocks([l1, l2]),
    encodeLocks([l1, l2, l3, l1]),
    encodeLocks([l1, { ...l2, amount: l2.amount + 1n }, l3]),
    encodeLocks([l1, { ...l2, expiration: l2.expiration + 1n }, l3]),
    encodeLocks([l1, { ...l2, secrethash: secretFor('other').secrethash }, l3]),
    '0x',
  ]
  for (const bytes of wrong) await expectRevert(simulateUnlock(channel, B, A, bytes), 'TN/unlock: locksroot mismatch')
  await unlock(fx, channel, B.address, A.address, locks)
})

test('invariant 16: locks whose length is not a multiple of 96 bytes are refused', async () => {
  const { locks, secrets } = await threeLocks()
  const { channel } = await settledWithLocks(locks, { register: secrets })
  await expectRevert(simulateUnlock(channel, B, A, concatHex([encodeLocks(locks), '0x00'])), 'TN: invalid locks size')
  await expectRevert(simulateUnlock(channel, B, A, encodeLock(locks[0]!).slice(0, -2) as Hex), 'TN: invalid locks size')
})

test('invariant 16: unlock is refused while the channel is open or closed ("channel id still exists")', async () => {
  const { locks, secrets } = await threeLocks()
  const channel = await openFundedChannel(fx, A, B, 100n, 0n)
  await expectRevert(simulateUnlock(channel, B, A, encodeLocks(locks)), 'TN/unlock: channel id still exists')
  const proof = await signBalanceProof(fx, A, channel, { nonce: 1n, locked: 60n, locksroot: locksroot(locks) })
  await registerSecrets(fx, secrets)
  await closeChannel(fx, channel, B, A, proof)
  await expectRevert(simulateUnlock(channel, B, A, encodeLocks(locks)), 'TN/unlock: channel id still exists')
})

test('unlock naming another pair for a live channel id is refused ("channel not settled")', async () => {
  const channel = await openChannel(fx, A, B)
  // (A, C) has no channel, so the id check passes, but channel `channel` itself is still open.
  await expectRevert(simulateUnlock(channel, C, A, '0x'), 'TN/unlock: channel not settled')
})

test('invariant 16: the two directions are unlocked independently, each from its own record', async () => {
  const now = await blockNumber(fx)
  const sA = secretFor('A to B')
  const sB = secretFor('B to A')
  const locksA: Lock[] = [{ expiration: now + 100n, amount: 8n, secrethash: sA.secrethash }]
  const locksB: Lock[] = [{ expiration: now + 100n, amount: 3n, secrethash: sB.secrethash }]
  const channel = await openFundedChannel(fx, A, B, 50n, 50n)
  const proofA = await signBalanceProof(fx, A, channel, { nonce: 1n, transferred: 5n, locked: 8n, locksroot: locksroot(locksA) })
  const proofB = await signBalanceProof(fx, B, channel, { nonce: 1n, locked: 3n, locksroot: locksroot(locksB) })
  await registerSecrets(fx, [sA.secret])
  await closeChannel(fx, channel, A, B, proofB)
  await updateNonClosingBalanceProof(fx, channel, A, B, proofA)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A, proofA), settleSide(B, proofB))
  expect(await participantInfo(fx, channel, A.address, B.address)).toMatchObject({ locksroot: proofA.locksroot, lockedAmount: 8n })
  expect(await participantInfo(fx, channel, B.address, A.address)).toMatchObject({ locksroot: proofB.locksroot, lockedAmount: 3n })

  // A's locks cannot be unlocked with the direction reversed.
  await expectRevert(simulateUnlock(channel, A, B, encodeLocks(locksA)), 'TN/unlock: locksroot mismatch')
  const b2a = await unlock(fx, channel, A.address, B.address, locksB)
  expect(tokenNetworkEvents(b2a, 'ChannelUnlocked')[0]!.args).toMatchObject({
    receiver: A.address,
    sender: B.address,
    unlocked_amount: 0n,
    returned_tokens: 3n,
  })
  // One direction done, the other still pending: Settled, then Removed.
  expect((await channelInfo(fx, channel, A.address, B.address)).state).toBe(ChannelState.Settled)
  const a2b = await unlock(fx, channel, B.address, A.address, locksA)
  expect(tokenNetworkEvents(a2b, 'ChannelUnlocked')[0]!.args).toMatchObject({
    receiver: B.address,
    sender: A.address,
    unlocked_amount: 8n,
    returned_tokens: 0n,
  })
  expect((await channelInfo(fx, channel, A.address, B.address)).state).toBe(ChannelState.Removed)
})

test('invariant 16: payouts are capped at the amount settlement kept back', async () => {
  // A deposited 20 but its proof locks 60: settlement can keep back only 20 for A's locks.
  const { locks, secrets } = await threeLocks()
  const { channel } = await settledWithLocks(locks, { deposit: 20n, register: secrets })
  expect((await participantInfo(fx, channel, A.address, B.address)).lockedAmount).toBe(20n)
  const receipt = await unlock(fx, channel, B.address, A.address, locks)
  expect(tokenNetworkEvents(receipt, 'ChannelUnlocked')[0]!.args).toMatchObject({ unlocked_amount: 20n, returned_tokens: 0n })
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(0n)
})

test('claimable lock amounts that overflow uint256 saturate instead of locking the tokens in forever', async () => {
  // A malformed proof (locks summing past 2^256): the capped payout still goes out. 0.40 would panic here.
  const now = await blockNumber(fx)
  const [s1, s2] = [secretFor('huge 1'), secretFor('huge 2')]
  const locks: Lock[] = [
    { expiration: now + 100n, amount: MAX_UINT256, secrethash: s1.secrethash },
    { expiration: now + 100n, amount: 5n, secrethash: s2.secrethash },
  ]
  const channel = await openFundedChannel(fx, A, B, 30n, 0n)
  const proof: SignedBalanceProof = await signBalanceProof(fx, A, channel, { nonce: 1n, locked: 25n, locksroot: locksroot(locks) })
  await registerSecrets(fx, [s1.secret, s2.secret])
  await closeChannel(fx, channel, B, A, proof)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(B), settleSide(A, proof))
  const receipt = await unlock(fx, channel, B.address, A.address, locks)
  expect(tokenNetworkEvents(receipt, 'ChannelUnlocked')[0]!.args).toMatchObject({ unlocked_amount: 25n, returned_tokens: 0n })
})

test.each([1, 10, 100])('unlock of a settled channel with %i locks pays exactly the claimable ones', async (count) => {
  const claimable = (i: number) => i % 3 !== 1
  const settled = await settledChannelWithLocks(fx, { count, sender: A, receiver: B, claimable, label: `bulk ${count}` })
  const aBefore = await tokenBalance(fx, A.address)
  const bBefore = await tokenBalance(fx, B.address)
  const receipt = await sendTokenNetwork(fx, C, 'unlock', [settled.channelId, B.address, A.address, settled.encodedLocks])
  expect(tokenNetworkEvents(receipt, 'ChannelUnlocked')[0]!.args).toMatchObject({ unlocked_amount: settled.claimable, returned_tokens: settled.unclaimable })
  expect(await tokenBalance(fx, B.address)).toBe(bBefore + settled.claimable)
  expect(await tokenBalance(fx, A.address)).toBe(aBefore + settled.unclaimable)
  expect(settled.claimable + settled.unclaimable).toBe(BigInt((count * (count + 1)) / 2))
})

test('a token whose transfer returns false makes unlock revert with "unlocked/returned transfer failed"', async () => {
  const fake = await deployRaw(fx.controller.client, fakeTokenBytecode(selectors.transfer))
  const tokenNetwork = await deploy(fx.controller.client, TokenNetwork, [
    fake,
    fx.secretRegistry,
    SETTLE_TIMEOUT_MIN,
    SETTLE_TIMEOUT_MAX,
    fx.controller.address,
    1000n,
    10_000n,
  ])
  const onFake = { ...fx, tokenNetwork }
  const { locks, secrets } = await threeLocks()
  await registerSecrets(fx, [secrets[0]!])
  // Two channels whose settle pays nothing (so settle does not call transfer): all of A's deposit is locked.
  for (const [id, receiver] of [
    [1n, B],
    [2n, C],
  ] as const) {
    await sendTokenNetwork(fx, A, 'openChannel', [A.address, receiver.address, DEFAULT_SETTLE_TIMEOUT], tokenNetwork)
    await sendTokenNetwork(fx, A, 'setTotalDeposit', [id, A.address, 60n, receiver.address], tokenNetwork)
    const proof = await signBalanceProof(onFake, A, id, { nonce: 1n, locked: 60n, locksroot: locksroot(id === 1n ? locks : [locks[1]!]) })
    await closeChannel(onFake, id, receiver, A, proof)
    await passSettleWindow(onFake, id, A.address, receiver.address)
    await settleChannel(onFake, id, settleSide(receiver), settleSide(A, proof))
  }
  // Channel 1: lock 1 is claimable, so the receiver's transfer fails first; channel 2: nothing claimable, the refund fails.
  await expectRevert(simulateTokenNetwork(fx, C, 'unlock', [1n, B.address, A.address, encodeLocks(locks)], tokenNetwork), 'TN/unlock: unlocked transfer failed')
  await expectRevert(
    simulateTokenNetwork(fx, C, 'unlock', [2n, C.address, A.address, encodeLocks([locks[1]!])], tokenNetwork),
    'TN/unlock: returned transfer failed',
  )
})
