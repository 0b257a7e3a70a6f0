// A TypeScript reference model of docs/protocol.md §1.5 (uncooperative settlement) and of what unlock pays, written
// from the spec rather than from the contract, so the settle tests compare the chain against an independent
// computation.

import { maxUint256 } from 'viem'

export const MAX_UINT256 = maxUint256

/** One side of a channel at settlement: stored deposit/withdrawn plus the transferred/locked its proof commits to. */
export type SideState = {
  deposit: bigint
  withdrawn: bigint
  transferred: bigint
  locked: bigint
}

export type SettlementAmounts = {
  /** total available deposit: D1 + D2 - W1 - W2 */
  tad: bigint
  /** paid to participant 1 by settleChannel */
  s1: bigint
  /** paid to participant 2 by settleChannel */
  s2: bigint
  /** kept back for participant 1's locks (unlock pays it to participant 2 or back to 1) */
  sl1: bigint
  /** kept back for participant 2's locks */
  sl2: bigint
}

export class TransfersNotOrderedError extends Error {
  override name = 'TransfersNotOrderedError' as const
  constructor() {
    super('participant 1 sent more (transferred + locked) than participant 2: settleChannel reverts "TN: transfers not ordered"')
  }
}

/** a + b, saturating at 2^256 - 1. */
export function saturatingAdd(a: bigint, b: bigint): bigint {
  const sum = a + b
  return sum > MAX_UINT256 ? MAX_UINT256 : sum
}

/** [a - b floored at 0, the part of b actually taken from a]. */
export function flooredSub(a: bigint, b: bigint): [bigint, bigint] {
  return a > b ? [a - b, b] : [0n, a]
}

/** What participant 1 could receive at most, before clamping to the channel's tokens (getMaxPossibleReceivableAmount). */
export function maxReceivable(p1: SideState, p2: SideState): bigint {
  const sent1 = saturatingAdd(p1.transferred, p1.locked)
  const sent2 = saturatingAdd(p2.transferred, p2.locked)
  if (sent2 < sent1) throw new TransfersNotOrderedError()
  return flooredSub(saturatingAdd(sent2 - sent1, p1.deposit), p1.withdrawn)[0]
}

/**
 * The payouts of settleChannel(p1, p2) per docs/protocol.md §1.5. Throws TransfersNotOrderedError where the contract reverts.
 * S1 + S2 + SL1 + SL2 == TAD by construction.
 */
export function settlementAmounts(p1: SideState, p2: SideState): SettlementAmounts {
  const tad = p1.deposit + p2.deposit - p1.withdrawn - p2.withdrawn
  const r1 = [maxReceivable(p1, p2), tad].reduce((a, b) => (a < b ? a : b))
  const r2 = tad - r1
  const [s1, sl2] = flooredSub(r1, p2.locked)
  const [s2, sl1] = flooredSub(r2, p1.locked)
  return { tad, s1, s2, sl1, sl2 }
}

/** Orders two sides the way settleChannel needs them: smaller saturated transferred + locked first. */
export function inSettleOrder<T extends { transferred: bigint; locked: bigint }>(a: T, b: T): [T, T] {
  return saturatingAdd(a.transferred, a.locked) <= saturatingAdd(b.transferred, b.locked) ? [a, b] : [b, a]
}

/** What unlock pays: the claimable locks' sum (saturating), capped at what settlement kept back; the rest returns to the sender. */
export function unlockAmounts(claimableLocked: bigint, keptBack: bigint): { unlocked: bigint; returned: bigint } {
  const unlocked = claimableLocked < keptBack ? claimableLocked : keptBack
  return { unlocked, returned: keptBack - unlocked }
}

/**
 * A lock pays the receiver iff its secret was registered on-chain in a block strictly before its expiration
 * (0 < revealBlock < expiration). See docs/protocol.md §6: we follow the contract, not the Python node.
 */
export function isClaimable(expiration: bigint, revealBlock: bigint): boolean {
  return revealBlock > 0n && revealBlock < expiration
}

/**
 * The fair final balance of participant 1 after settle and both unlocks, given the latest proofs of both:
 * D1 - W1 + T2 - T1 + Lc2 - Lc1 (Lc = claimable part of the locks).
 */
export function fairFinalBalance(p1: SideState & { claimable: bigint }, p2: SideState & { claimable: bigint }): bigint {
  return p1.deposit - p1.withdrawn + p2.transferred - p1.transferred + p2.claimable - p1.claimable
}
