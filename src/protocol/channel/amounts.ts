import { maxUint256 } from 'viem'
import type { ChannelEnd } from '../state/types.ts'

/** What `end` has sent to its partner with finished (unlocked) payments. */
export function transferred(end: ChannelEnd): bigint {
  return end.balanceProof?.transferredAmount ?? 0n
}

/** What `end` has in pending locks (the locked_amount of its latest balance proof). */
export function locked(end: ChannelEnd): bigint {
  return end.balanceProof?.lockedAmount ?? 0n
}

/** The withdraw total that counts against `end`: on-chain, or the highest one asked for and not yet expired. */
export function withdrawTotal(end: ChannelEnd): bigint {
  return end.pendingWithdraws.reduce((max, w) => (w.totalWithdraw > max ? w.totalWithdraw : max), end.withdrawn)
}

/** docs/protocol.md §4.2: what `from` owns in the channel, locks included. */
export function balance(from: ChannelEnd, to: ChannelEnd): bigint {
  return from.deposit - withdrawTotal(from) - transferred(from) + transferred(to)
}

/** What `from` can still lock in a new transfer to `to`. */
export function distributable(from: ChannelEnd, to: ChannelEnd): bigint {
  const free = balance(from, to) - locked(from)
  const room = maxUint256 - transferred(from) - locked(from)
  return free < room ? free : room
}

/** Both deposits less both withdraws: what the contract holds for this channel. */
export function capacity(a: ChannelEnd, b: ChannelEnd): bigint {
  return a.deposit - a.withdrawn + b.deposit - b.withdrawn
}
