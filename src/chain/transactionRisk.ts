import { formatEther, formatGwei, type Hex } from 'viem'
import type { DeadlineRisk } from './fees.ts'

/**
 * A transaction with a deadline that may miss it (fees.ts `DeadlineRisk`): as the queue reports one it sent (with its
 * nonce and newest hash), or as the node reports one it could not even send (the cap, the balance).
 */
export type TransactionRisk = DeadlineRisk & { description: string; deadline: bigint; head: bigint; nonce?: number; hash?: Hex }

/** What a transaction at risk of missing its deadline needs, in a sentence for its owner. */
export function describeRisk(risk: TransactionRisk): string {
  const left = risk.deadline - risk.head
  const what = `${risk.description}${risk.nonce !== undefined ? ` (nonce ${risk.nonce})` : ''} must be mined by block ${risk.deadline} (${left >= 0n ? `${left} blocks left` : 'passed'})`
  switch (risk.reason) {
    case 'fee_cap':
      return `${what}, but the chain asks more per gas than the cap allows: raise --max-fee-per-gas to at least ${formatGwei(risk.needed)} gwei`
    case 'balance':
      return `${what}, but the account cannot pay its gas: it needs ${formatEther(risk.needed)} ETH`
    case 'not_mined':
      return `${what} and is not mined yet, at its highest offer`
    case 'missed':
      return `${what}, and its deadline passed before it was mined`
  }
}
