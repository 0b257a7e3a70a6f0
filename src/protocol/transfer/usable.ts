import { distributable } from '../channel/amounts.ts'
import { WAITING_SYNC_REASON, waitsForSync } from '../channel/sync.ts'
import type { TransitionContext } from '../state/access.ts'
import type { Channel } from '../state/types.ts'

/**
 * Why `channel` cannot carry a new lock of `amount` with `blocksLeft` blocks until it expires, or undefined
 * when it can: the lock must outlive the reveal timeout, and a close must not be able to settle before it
 * expires (reveal_timeout < blocksLeft <= settle_timeout, docs/protocol.md §3.8).
 */
export function whyNotUsable(channel: Channel | undefined, amount: bigint, blocksLeft: bigint, ctx: TransitionContext): string | undefined {
  if (!channel) return 'no channel'
  if (channel.state !== 'opened') return `channel is ${channel.state}`
  if (waitsForSync(channel)) return WAITING_SYNC_REASON
  if (amount <= 0n) return 'amount must be positive'
  if (blocksLeft <= channel.revealTimeout) return `the lock timeout ${blocksLeft} must exceed the reveal timeout ${channel.revealTimeout}`
  if (blocksLeft > channel.settleTimeout) return `the lock timeout ${blocksLeft} exceeds the settle timeout ${channel.settleTimeout}`
  if (channel.our.locks.length >= ctx.maxPendingLocks) return `too many pending locks (${ctx.maxPendingLocks})`
  const free = distributable(channel.our, channel.partnerEnd)
  if (amount > free) return `insufficient balance: ${free} available, ${amount} needed`
  return undefined
}
