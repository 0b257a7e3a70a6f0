import { channelKey } from '../../protocol/channel/key.ts'
import { orderedSettle } from '../../protocol/channel/settleOrder.ts'
import type { ChainTransaction, Transaction } from '../../protocol/state/effects.ts'
import type { Storage } from '../../storage/storage.ts'

/** Turns a transaction that needs our stored proof history into the one the chain layer sends. */
export async function resolveFromHistory(tx: Transaction, history: Pick<Storage, 'sentProof' | 'sentLocks'>): Promise<ChainTransaction> {
  if (tx.type === 'settleWithHistory') {
    const proof = await history.sentProof(channelKey(tx.tokenNetwork, tx.channelId), tx.ourBalanceHash)
    if (!proof) throw new Error(`no stored proof of ours with balance hash ${tx.ourBalanceHash}`)
    const ours = { transferredAmount: proof.transferredAmount, lockedAmount: proof.lockedAmount, locksroot: proof.locksroot }
    return orderedSettle(tx.tokenNetwork, tx.channelId, { address: tx.our, balance: ours }, { address: tx.partner, balance: tx.partnerBalance })
  }
  if (tx.type === 'unlockWithHistory') {
    const locks = await history.sentLocks(channelKey(tx.tokenNetwork, tx.channelId), tx.nonce)
    return {
      type: 'unlock',
      tokenNetwork: tx.tokenNetwork,
      channelId: tx.channelId,
      receiver: tx.receiver,
      sender: tx.sender,
      locks: locks.map(({ expiration, amount, secrethash }) => ({ expiration, amount, secrethash })),
    }
  }
  return tx
}
