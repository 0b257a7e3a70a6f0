import type { JournalEntry, TransactionJournal } from '../chain/transactionJournal.ts'

/** The journal's writes in a service store's step (MonitorTx, PfsTx). */
export type JournalSteps = {
  /** Only the instance holding the service's lease writes the journal (docs/decisions/0077): a step without it is refused. */
  requireLease(): void
  putJournalEntry(entry: JournalEntry): void
  deleteJournalEntry(nonce: number): void
}

/** A service store with group commit (the monitoring service's, the pathfinding service's). */
export type JournalStore = {
  journal(): JournalEntry[]
  transact<T>(step: (tx: JournalSteps) => T): Promise<T>
}

/**
 * A service's transaction journal (docs/decisions/0051), kept in its store under keys of its own: each write is a
 * step of `transact`, so it goes in the next batch with the service's other writes (group commit) and resolves once
 * that batch is durable (`sync: true`). Writes of one nonce land in the order they were made. On PostgreSQL each is
 * refused (LeaseLostError) unless this instance holds the service's lease in the transaction that writes it.
 */
export function storeJournal(store: JournalStore): TransactionJournal {
  return {
    load: async () => store.journal(),
    put: async (entry) => {
      // Copied and checked when the call is made, not when its batch runs: the queue may change its object meanwhile.
      const copy = structuredClone(entry)
      // The entry is durable before its broadcast: this is the write that records the action, where the lease is checked.
      await store.transact((tx) => {
        tx.requireLease()
        tx.putJournalEntry(copy)
      })
    },
    delete: (nonce) =>
      store.transact((tx) => {
        tx.requireLease()
        tx.deleteJournalEntry(nonce)
      }),
  }
}
