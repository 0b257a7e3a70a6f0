// Settlement arithmetic (docs/protocol.md §1.5) on-chain against the reference model in test/support/settlement.ts.
import fc from 'fast-check'
import { keccak256, toHex } from 'viem'
import { expect, test } from 'vitest'
import { CustomToken } from '../../src/contracts/index.ts'
import { locksroot, type Lock } from '../../src/protocol/locks.ts'
import { useChain } from '../support/chainSuite.ts'
import { fairFinalBalance, inSettleOrder, settlementAmounts, MAX_UINT256, type SideState } from '../support/settlement.ts'
import {
  blockNumber,
  closeChannel,
  mined,
  mintAndApprove,
  openFundedChannel,
  participantInfo,
  passSettleWindow,
  registerSecrets,
  secretFor,
  settleChannel,
  settleSide,
  signBalanceProof,
  tokenBalance,
  unlock,
  updateNonClosingBalanceProof,
  withdraw,
  type ChainFixture,
  type Party,
  type SignedBalanceProof,
} from '../support/tokenNetwork.ts'

let fx: ChainFixture
let A: Party, B: Party
useChain(
  (t) =>
    ({
      fx,
      parties: [A, B],
    } = t),
)

/** A's and B's stored deposit/withdrawn and the transferred/locked of the proof each signed (submitted by the other). */
type Scenario = { a: SideState; b: SideState; closer: 'A' | 'B' }

type Outcome = {
  /** payout and amount kept back for locks, per participant */
  paid: { A: bigint; B: bigint }
  kept: { A: bigint; B: bigint }
  /** token balance changes caused by settle */
  received: { A: bigint; B: bigint }
  contractDecrease: bigint
}

const hasProof = (s: SideState) => s.transferred !== 0n || s.locked !== 0n

/** Plays a scenario on-chain: fund, withdraw, close + update with the given proofs, settle; returns what happened. */
async function settleOnChain({ a, b, closer }: Scenario): Promise<Outcome> {
  const channel = await openFundedChannel(fx, A, B, a.deposit, b.deposit)
  if (a.withdrawn > 0n) await withdraw(fx, channel, A, B, a.withdrawn)
  if (b.withdrawn > 0n) await withdraw(fx, channel, B, A, b.withdrawn)
  const root = keccak256(toHex(`pending locks ${channel}`))
  const proofOf = async (signer: Party, s: SideState): Promise<SignedBalanceProof | undefined> =>
    hasProof(s) ? signBalanceProof(fx, signer, channel, { nonce: 7n, transferred: s.transferred, locked: s.locked, locksroot: root }) : undefined
  const proofA = await proofOf(A, a)
  const proofB = await proofOf(B, b)
  const [closing, other, closingProof, otherProof] = closer === 'A' ? [A, B, proofA, proofB] : [B, A, proofB, proofA]
  await closeChannel(fx, channel, closing, other, otherProof)
  if (closingProof) await updateNonClosingBalanceProof(fx, channel, closing, other, closingProof)
  await passSettleWindow(fx, channel, A.address, B.address)

  const before = { A: await tokenBalance(fx, A.address), B: await tokenBalance(fx, B.address), tn: await tokenBalance(fx, fx.tokenNetwork) }
  const { first, amount1, amount2 } = await settleChannel(fx, channel, settleSide(A, proofA), settleSide(B, proofB))
  const aFirst = first.participant === A.address
  return {
    paid: { A: aFirst ? amount1 : amount2, B: aFirst ? amount2 : amount1 },
    kept: {
      A: (await participantInfo(fx, channel, A.address, B.address)).lockedAmount,
      B: (await participantInfo(fx, channel, B.address, A.address)).lockedAmount,
    },
    received: { A: (await tokenBalance(fx, A.address)) - before.A, B: (await tokenBalance(fx, B.address)) - before.B },
    contractDecrease: before.tn - (await tokenBalance(fx, fx.tokenNetwork)),
  }
}

/** The model's answer for the same scenario, mapped back to A and B. */
function modelOutcome({ a, b }: Scenario) {
  const [first, second] = inSettleOrder({ ...a, who: 'A' as const }, { ...b, who: 'B' as const })
  const m = settlementAmounts(first, second)
  const paid = { [first.who]: m.s1, [second.who]: m.s2 } as { A: bigint; B: bigint }
  const kept = { [first.who]: m.sl1, [second.who]: m.sl2 } as { A: bigint; B: bigint }
  return { ...m, paid, kept }
}

async function expectMatchesModel(scenario: Scenario) {
  const chain = await settleOnChain(scenario)
  const model = modelOutcome(scenario)
  expect(chain.paid).toEqual(model.paid)
  expect(chain.kept).toEqual(model.kept)
  expect(chain.received).toEqual(model.paid)
  expect(chain.contractDecrease).toBe(model.paid.A + model.paid.B)
  expect(chain.paid.A + chain.paid.B + chain.kept.A + chain.kept.B).toBe(model.tad)
}

const side = (deposit: bigint, withdrawn: bigint, transferred: bigint, locked: bigint): SideState => ({ deposit, withdrawn, transferred, locked })
const MAX = MAX_UINT256

const cases: Array<[string, Scenario]> = [
  ['no transfers: each gets its deposit', { a: side(100n, 0n, 0n, 0n), b: side(50n, 0n, 0n, 0n), closer: 'A' }],
  ['a one-way transfer', { a: side(100n, 0n, 30n, 0n), b: side(50n, 0n, 0n, 0n), closer: 'B' }],
  ['transfers and locks both ways', { a: side(100n, 0n, 30n, 10n), b: side(50n, 0n, 20n, 5n), closer: 'A' }],
  ['withdrawn amounts are subtracted', { a: side(100n, 20n, 30n, 0n), b: side(50n, 10n, 5n, 0n), closer: 'B' }],
  ['equal transferred + locked on both sides', { a: side(100n, 0n, 20n, 5n), b: side(50n, 0n, 25n, 0n), closer: 'A' }],
  ['a side withdrew more than its own deposit', { a: side(100n, 0n, 130n, 0n), b: side(50n, 120n, 0n, 0n), closer: 'A' }],
  ['withdrawn exceeds deposit + received: the receivable floors at zero', { a: side(10n, 40n, 0n, 0n), b: side(50n, 0n, 5n, 0n), closer: 'B' }],
  [
    'transferred more than the whole channel holds (invalid proof): payouts clamp to the channel',
    { a: side(100n, 0n, 500n, 0n), b: side(50n, 0n, 0n, 0n), closer: 'B' },
  ],
  ['locks larger than what the receiver may get: the kept-back amount is clamped', { a: side(10n, 0n, 0n, 100n), b: side(0n, 0n, 0n, 0n), closer: 'B' }],
  ['transferred near 2^256 (stale or invalid): saturating arithmetic never reverts', { a: side(100n, 0n, 10n, 0n), b: side(50n, 0n, MAX, 0n), closer: 'A' }],
  ['transferred + locked overflow on both sides: both saturate to MAX', { a: side(100n, 0n, MAX, 5n), b: side(50n, 0n, MAX - 1n, 10n), closer: 'B' }],
  ['a huge locked amount with a small transferred one', { a: side(70n, 0n, 3n, MAX - 2n), b: side(80n, 30n, 0n, 9n), closer: 'A' }],
]

test.each(cases)('invariant 14: settlement outcome equals the reference model: %s', async (_name, scenario) => {
  await expectMatchesModel(scenario)
})

test('invariant 14: with the latest proofs, settle + unlock give each side D - W + T_other - T_own + Lc_other - Lc_own', async () => {
  const now = await blockNumber(fx)
  const claimableAtoB = secretFor('a->b claimable')
  const expiredAtoB = secretFor('a->b never revealed')
  const claimableBtoA = secretFor('b->a claimable')
  const locksA: Lock[] = [
    { expiration: now + 200n, amount: 7n, secrethash: claimableAtoB.secrethash },
    { expiration: now + 200n, amount: 4n, secrethash: expiredAtoB.secrethash },
  ]
  const locksB: Lock[] = [{ expiration: now + 200n, amount: 6n, secrethash: claimableBtoA.secrethash }]
  const a = { ...side(100n, 10n, 30n, 11n), claimable: 7n }
  const b = { ...side(50n, 5n, 20n, 6n), claimable: 6n }
  const channel = await openFundedChannel(fx, A, B, a.deposit, b.deposit)
  await withdraw(fx, channel, A, B, a.withdrawn)
  await withdraw(fx, channel, B, A, b.withdrawn)
  const proofA = await signBalanceProof(fx, A, channel, { nonce: 9n, transferred: a.transferred, locked: a.locked, locksroot: locksroot(locksA) })
  const proofB = await signBalanceProof(fx, B, channel, { nonce: 8n, transferred: b.transferred, locked: b.locked, locksroot: locksroot(locksB) })
  await registerSecrets(fx, [claimableAtoB.secret, claimableBtoA.secret])
  const start = { A: await tokenBalance(fx, A.address), B: await tokenBalance(fx, B.address) }

  await closeChannel(fx, channel, B, A, proofA)
  await updateNonClosingBalanceProof(fx, channel, B, A, proofB)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A, proofA), settleSide(B, proofB))
  await unlock(fx, channel, B.address, A.address, locksA)
  await unlock(fx, channel, A.address, B.address, locksB)

  expect((await tokenBalance(fx, A.address)) - start.A).toBe(fairFinalBalance(a, b))
  expect((await tokenBalance(fx, B.address)) - start.B).toBe(fairFinalBalance(b, a))
  expect(fairFinalBalance(a, b)).toBe(100n - 10n + 20n - 30n + 6n - 7n)
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(0n)
})

test('invariant 14: an old proof of the honest side, submitted by its partner, never makes the honest side lose', async () => {
  // Latest: A sent 30, B sent 20. A (cheating) closes with B's *old* proof (B had sent only 5) while B updates
  // with A's latest proof. Only A's own receipts shrink: B gets at least its fair balance.
  const channel = await openFundedChannel(fx, A, B, 100n, 50n)
  const latestA = await signBalanceProof(fx, A, channel, { nonce: 5n, transferred: 30n })
  await signBalanceProof(fx, B, channel, { nonce: 4n, transferred: 20n })
  const oldB = await signBalanceProof(fx, B, channel, { nonce: 1n, transferred: 5n })
  const fairB = fairFinalBalance({ ...side(50n, 0n, 20n, 0n), claimable: 0n }, { ...side(100n, 0n, 30n, 0n), claimable: 0n })

  const bBefore = await tokenBalance(fx, B.address)
  await closeChannel(fx, channel, A, B, oldB)
  await updateNonClosingBalanceProof(fx, channel, A, B, latestA)
  await passSettleWindow(fx, channel, A.address, B.address)
  await settleChannel(fx, channel, settleSide(A, latestA), settleSide(B, oldB))
  const gotB = (await tokenBalance(fx, B.address)) - bBefore
  expect(gotB).toBeGreaterThanOrEqual(fairB)
  expect(gotB).toBe(50n + 30n - 5n)
})

test('invariant 15: tokens sent to the TokenNetwork directly change no payout and stay stuck there', async () => {
  const channel = await openFundedChannel(fx, A, B, 100n, 50n)
  await mintAndApprove(fx, B, 1000n)
  await mined(B.client, await B.client.writeContract({ address: fx.token, abi: CustomToken.abi, functionName: 'transfer', args: [fx.tokenNetwork, 1000n] }))
  const proofA = await signBalanceProof(fx, A, channel, { nonce: 1n, transferred: 500n })
  await closeChannel(fx, channel, B, A, proofA)
  await passSettleWindow(fx, channel, A.address, B.address)
  const { amount1, amount2 } = await settleChannel(fx, channel, settleSide(B), settleSide(A, proofA))
  // A claims to have sent 500, far more than the channel's 150: B still gets only the channel's tokens.
  expect([amount1, amount2]).toEqual([150n, 0n])
  expect(await tokenBalance(fx, fx.tokenNetwork)).toBe(1000n)
})

test('property: for random valid inputs the chain pays what the model says and S1 + S2 + SL1 + SL2 == TAD', async () => {
  const amount = fc.oneof(
    { weight: 3, arbitrary: fc.bigInt({ min: 0n, max: 300n }) },
    { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: MAX }) },
    { weight: 1, arbitrary: fc.constantFrom(0n, MAX, MAX - 1n) },
  )
  const scenario = fc
    .record({
      d1: fc.bigInt({ min: 0n, max: 1000n }),
      d2: fc.bigInt({ min: 0n, max: 1000n }),
      w1Share: fc.double({ min: 0, max: 1, noNaN: true }),
      w2Share: fc.double({ min: 0, max: 1, noNaN: true }),
      t1: amount,
      l1: amount,
      t2: amount,
      l2: amount,
      closer: fc.constantFrom('A' as const, 'B' as const),
    })
    .map(({ d1, d2, w1Share, w2Share, t1, l1, t2, l2, closer }): Scenario => {
      // Withdraws are bounded by the total deposit: W1 + W2 <= D1 + D2.
      const total = d1 + d2
      const w1 = BigInt(Math.floor(Number(total) * w1Share))
      const w2 = BigInt(Math.floor(Number(total - w1) * w2Share))
      return { a: side(d1, w1, t1, l1), b: side(d2, w2, t2, l2), closer }
    })
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      const id = await fx.controller.client.snapshot()
      try {
        await expectMatchesModel(s)
      } finally {
        await fx.controller.client.revert({ id })
      }
    }),
    // Each run is a dozen transactions: no shrinking, so a failure reports (with its seed) within the test timeout.
    { numRuns: 15, endOnFailure: true },
  )
})
