// A whole channel life on anvil, the way two nodes would drive it: open, fund, withdraw, pay off-chain with
// balance proofs and locks, close, update, settle, unlock both directions. Every token is accounted for.
import type { Hex } from 'viem'
import { expect, test } from 'vitest'
import { TokenNetwork } from '../../src/contracts/index.ts'
import { locksroot, type Lock } from '../../src/protocol/locks.ts'
import { useChain } from '../support/chainSuite.ts'
import { expectRevert } from '../support/revert.ts'
import { fairFinalBalance, isClaimable, settlementAmounts } from '../support/settlement.ts'
import {
  ChannelState,
  blockNumber,
  channelInfo,
  closeChannel,
  deposit,
  mineTo,
  openChannel,
  participantInfo,
  registerSecrets,
  secretFor,
  sendTokenNetwork,
  settleArgs,
  settleSide,
  signBalanceProof,
  simulateTokenNetwork,
  tokenBalance,
  tokenNetworkEvents,
  unlock,
  updateNonClosingBalanceProof,
  withdraw,
  withdrawInput,
  type ChainFixture,
  type Party,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let A: Party, B: Party, C: Party
useChain(
  { isolate: false },
  (t) =>
    ({
      fx,
      parties: [A, B, C],
    } = t),
)

const SETTLE_TIMEOUT = 20n

test('a channel from open to the last unlock pays both sides exactly what their transfers and revealed locks say', async () => {
  const startA = await tokenBalance(fx, A.address)
  const startB = await tokenBalance(fx, B.address)

  // Open and fund: A 200, B 100 (deposit() mints exactly what it deposits, so balances start unchanged).
  const channel = await openChannel(fx, A, B, SETTLE_TIMEOUT)
  await deposit(fx, channel, A, 200n, B)
  await deposit(fx, channel, B, 100n, A)
  expect([await tokenBalance(fx, A.address), await tokenBalance(fx, B.address)]).toEqual([startA, startB])

  // A withdraws 20 with B's consent, while the channel stays open.
  await withdraw(fx, channel, A, B, 20n)
  expect(await participantInfo(fx, channel, A.address, B.address)).toMatchObject({ deposit: 200n, withdrawnAmount: 20n })

  // Off-chain: each side sends transfers and keeps some locked. Locks expire at block `expiry`.
  const now = await blockNumber(fx)
  const expiry = now + 12n
  const secret = {
    aPaid: secretFor('life: A->B revealed in time'),
    aLate: secretFor('life: A->B revealed after expiry'),
    aNever: secretFor('life: A->B never revealed'),
    bPaid: secretFor('life: B->A revealed in time'),
    bNever: secretFor('life: B->A never revealed'),
  }
  const locksA: Lock[] = [
    { expiration: expiry, amount: 10n, secrethash: secret.aPaid.secrethash },
    { expiration: expiry, amount: 7n, secrethash: secret.aLate.secrethash },
    { expiration: expiry + 1n, amount: 5n, secrethash: secret.aNever.secrethash },
  ]
  const locksB: Lock[] = [
    { expiration: expiry, amount: 8n, secrethash: secret.bPaid.secrethash },
    { expiration: expiry + 2n, amount: 4n, secrethash: secret.bNever.secrethash },
  ]
  // A's proofs grow with each message; only the newest counts. B's too.
  await signBalanceProof(fx, A, channel, { nonce: 1n, transferred: 20n })
  await signBalanceProof(fx, A, channel, { nonce: 2n, transferred: 50n, locked: 10n, locksroot: locksroot(locksA.slice(0, 1)) })
  const latestA = await signBalanceProof(fx, A, channel, { nonce: 4n, transferred: 50n, locked: 22n, locksroot: locksroot(locksA) })
  await signBalanceProof(fx, B, channel, { nonce: 1n, transferred: 30n })
  const latestB = await signBalanceProof(fx, B, channel, { nonce: 3n, transferred: 30n, locked: 12n, locksroot: locksroot(locksB) })

  // Two secrets reach the chain before their locks expire.
  const inTime = await registerSecrets(fx, [secret.aPaid.secret, secret.bPaid.secret], C)
  expect(inTime.blockNumber).toBeLessThan(expiry)

  // A closes with B's newest proof; B answers with A's newest proof.
  const close = await closeChannel(fx, channel, A, B, latestB)
  expect(tokenNetworkEvents(close, 'ChannelClosed')[0]!.args).toMatchObject({ closing_participant: A.address, nonce: 3n })
  await updateNonClosingBalanceProof(fx, channel, A, B, latestA)
  const lastBlockOfWindow = close.blockNumber + SETTLE_TIMEOUT
  expect(await channelInfo(fx, channel, A.address, B.address)).toEqual({ settleBlockNumber: lastBlockOfWindow, state: ChannelState.Closed })

  // One secret only after its lock expired: it must not pay.
  await mineTo(fx, expiry)
  const late = await registerSecrets(fx, [secret.aLate.secret], C)
  expect(late.blockNumber).toBeGreaterThan(expiry)

  // Settle: B's side has the smaller transferred + locked (42 < 72), so B goes first.
  const first = settleSide(B, latestB)
  const second = settleSide(A, latestA)
  await mineTo(fx, lastBlockOfWindow - 1n)
  await expectRevert(simulateTokenNetwork(fx, C, 'settleChannel', settleArgs(channel, first, second)), 'TN/settle: settlement timeout')
  const earlyHash = await C.client.writeContract({
    address: fx.tokenNetwork,
    abi: TokenNetwork.abi,
    functionName: 'settleChannel',
    args: settleArgs(channel, first, second),
    gas: 500_000n,
  })
  const early = await C.client.waitForTransactionReceipt({ hash: earlyHash })
  expect([early.blockNumber, early.status]).toEqual([lastBlockOfWindow, 'reverted'])

  const beforeSettle = { A: await tokenBalance(fx, A.address), B: await tokenBalance(fx, B.address) }
  const settle = await sendTokenNetwork(fx, C, 'settleChannel', settleArgs(channel, first, second))
  expect(settle.blockNumber).toBe(lastBlockOfWindow + 1n)
  const model = settlementAmounts(
    { deposit: 100n, withdrawn: 0n, transferred: 30n, locked: 12n },
    { deposit: 200n, withdrawn: 20n, transferred: 50n, locked: 22n },
  )
  // B: 100 + 50 - 30, less A's 22 still locked = 108. A: 200 - 20 + 30 - 50, less B's 12 locked = 138.
  expect([model.s1, model.s2, model.sl1, model.sl2]).toEqual([108n, 138n, 12n, 22n])
  expect(tokenNetworkEvents(settle, 'ChannelSettled')[0]!.args).toEqual({
    channel_identifier: channel,
    participant1: B.address,
    participant1_amount: 108n,
    participant1_locksroot: latestB.locksroot,
    participant2: A.address,
    participant2_amount: 138n,
    participant2_locksroot: latestA.locksroot,
  })
  expect((await tokenBalance(fx, B.address)) - beforeSettle.B).toBe(108n)
  expect((await tokenBalance(fx, A.address)) - beforeSettle.A).toBe(138n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(34n)
  expect((await channelInfo(fx, channel, A.address, B.address)).state).toBe(ChannelState.Settled)

  // Unlock A's locks to B: only the lock revealed in time pays B (10); 7 + 5 go back to A.
  const revealBlock = (s: { secrethash: Hex }) =>
    s.secrethash === secret.aPaid.secrethash || s.secrethash === secret.bPaid.secrethash
      ? inTime.blockNumber
      : s.secrethash === secret.aLate.secrethash
        ? late.blockNumber
        : 0n
  const claimable = (locks: Lock[]) => locks.filter((l) => isClaimable(l.expiration, revealBlock(l))).reduce((s, l) => s + l.amount, 0n)
  expect([claimable(locksA), claimable(locksB)]).toEqual([10n, 8n])
  const aToB = await unlock(fx, channel, B.address, A.address, locksA, C)
  expect(tokenNetworkEvents(aToB, 'ChannelUnlocked')[0]!.args).toMatchObject({
    receiver: B.address,
    sender: A.address,
    unlocked_amount: 10n,
    returned_tokens: 12n,
  })
  // Unlock B's locks to A: 8 to A, 4 back to B.
  const bToA = await unlock(fx, channel, A.address, B.address, locksB, C)
  expect(tokenNetworkEvents(bToA, 'ChannelUnlocked')[0]!.args).toMatchObject({
    receiver: A.address,
    sender: B.address,
    unlocked_amount: 8n,
    returned_tokens: 4n,
  })
  expect((await channelInfo(fx, channel, A.address, B.address)).state).toBe(ChannelState.Removed)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(0n)

  // In total, after the 20 withdrawn: A = D - W + T_B - T_A + Lc_B - Lc_A, B likewise, and nothing is lost.
  const fairA = fairFinalBalance(
    { deposit: 200n, withdrawn: 20n, transferred: 50n, locked: 22n, claimable: 10n },
    { deposit: 100n, withdrawn: 0n, transferred: 30n, locked: 12n, claimable: 8n },
  )
  const fairB = fairFinalBalance(
    { deposit: 100n, withdrawn: 0n, transferred: 30n, locked: 12n, claimable: 8n },
    { deposit: 200n, withdrawn: 20n, transferred: 50n, locked: 22n, claimable: 10n },
  )
  expect([fairA, fairB]).toEqual([158n, 122n])
  expect((await tokenBalance(fx, A.address)) - startA).toBe(20n + fairA)
  expect((await tokenBalance(fx, B.address)) - startB).toBe(fairB)
  expect(fairA + 20n + fairB).toBe(300n)

  // The spent signatures are useless now, and the pair can start over on a new id.
  await expectRevert(simulateTokenNetwork(fx, C, 'unlock', [channel, B.address, A.address, '0x']), 'TN/unlock: locksroot mismatch')
  expect(await openChannel(fx, B, A, SETTLE_TIMEOUT)).toBe(channel + 1n)
})

test('a channel ended cooperatively: open, fund, pay off-chain, withdraw, then both sign the split and it closes in one transaction', async () => {
  const channel = await openChannel(fx, A, C, SETTLE_TIMEOUT)
  await deposit(fx, channel, A, 60n, C)
  await deposit(fx, channel, C, 40n, A)
  // Off-chain A paid C 25 and C paid A 5: A's balance is 40, C's 60. C has already withdrawn 10 of it.
  await withdraw(fx, channel, C, A, 10n)
  const before = { A: await tokenBalance(fx, A.address), C: await tokenBalance(fx, C.address) }
  const receipt = await sendTokenNetwork(fx, B, 'cooperativeSettle', [
    channel,
    await withdrawInput(fx, channel, A, C, 40n),
    await withdrawInput(fx, channel, C, A, 60n),
  ])
  expect(tokenNetworkEvents(receipt, 'ChannelSettled')[0]!.args).toMatchObject({ participant1_amount: 40n, participant2_amount: 60n })
  expect((await tokenBalance(fx, A.address)) - before.A).toBe(40n)
  expect((await tokenBalance(fx, C.address)) - before.C).toBe(50n)
  expect((await channelInfo(fx, channel, A.address, C.address)).state).toBe(ChannelState.Removed)
})
