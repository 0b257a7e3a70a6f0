import type { Address } from 'viem'
import type { BalanceData, Transaction } from '../state/effects.ts'

/**
 * The settle transaction for two sides: settleChannel wants the side that sent less (transferred + locked)
 * first, or it reverts with "TN: transfers not ordered".
 */
export function orderedSettle(
  tokenNetwork: Address,
  channelId: bigint,
  a: { address: Address; balance: BalanceData },
  b: { address: Address; balance: BalanceData },
): Extract<Transaction, { type: 'settle' }> {
  const aFirst = a.balance.transferredAmount + a.balance.lockedAmount <= b.balance.transferredAmount + b.balance.lockedAmount
  const [p1, p2] = aFirst ? [a, b] : [b, a]
  return {
    type: 'settle',
    tokenNetwork,
    channelId,
    participant1: p1.address,
    participant1Balance: p1.balance,
    participant2: p2.address,
    participant2Balance: p2.balance,
  }
}
