import type { Address, Hex } from 'viem'

/**
 * The account's transactions under way, one entry per nonce, written before anything is broadcast (write-ahead): the
 * transaction queue signs an attempt, puts it here, and only then sends it. After a crash the queue finds every nonce it
 * used and the exact bytes it signed, sends again what the chain does not hold, and takes the next nonce after the
 * last one here: no gap, and no nonce used for two different calls. Browser-safe (types and a memory journal only).
 */

/** EIP-1559 fees, or a legacy gas price on a chain whose blocks have no base fee. */
export type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | { gasPrice: bigint }

/** One signed version of an entry's transaction: the first, or a replacement at a higher fee (same nonce, same call). */
export type JournalAttempt = {
  hash: Hex
  /** The signed transaction as broadcast, so it can be broadcast again without signing again. */
  raw: Hex
  fees: Fees
  /** The chain's latest block when it was signed: how long it has waited is counted from here. */
  signedAtBlock: bigint
}

/** Where an entry stands: signed but maybe not broadcast; broadcast; mined in a block (not yet buried deep enough). */
export type JournalStatus = 'signed' | 'sent' | 'mined'

export type JournalEntry = {
  nonce: number
  /**
   * What the transaction is for, when its sender must find it again after a restart (a transaction intent's key): a
   * send under a key whose entry is still here joins that entry instead of taking a new nonce.
   */
  key?: string
  /** What it calls: `to` absent for a contract creation (then `data` is the creation code with its arguments). */
  call: { to?: Address; data: Hex; value?: bigint; description: string }
  gas: bigint
  /**
   * The last block in which it can still do its work (an update of the partner's close, a secret's registration, a
   * withdraw's expiry): it is priced harder as this nears, and its owner is told in time if it cannot make it.
   */
  deadline?: bigint
  /** Oldest first; the last is the one the chain should mine. */
  attempts: JournalAttempt[]
  status: JournalStatus
  /** Set once mined: which attempt, and in which block (checked against the chain until it is deep enough). */
  mined?: { hash: Hex; blockNumber: bigint; blockHash: Hex }
  /** Milliseconds since the epoch at which the call was queued. */
  createdAt: number
}

/** The durable home of the entries: the node's store, the monitoring service's, or a file next to a deployment. */
export type TransactionJournal = {
  /** Every entry, in nonce order. */
  load(): Promise<JournalEntry[]>
  /** Puts (or replaces) the entry of its nonce; durable once resolved. */
  put(entry: JournalEntry): Promise<void>
  /** The entry is done with: mined and buried, or given up. */
  delete(nonce: number): Promise<void>
}

/** A journal in memory: for a queue whose process keeps nothing (tests, throwaway nodes). */
export function memoryJournal(): TransactionJournal {
  const entries = new Map<number, JournalEntry>()
  return {
    load: async () => [...entries.values()].sort((a, b) => a.nonce - b.nonce).map((e) => structuredClone(e)),
    put: async (entry) => void entries.set(entry.nonce, structuredClone(entry)),
    delete: async (nonce) => void entries.delete(nonce),
  }
}
