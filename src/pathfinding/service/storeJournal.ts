import type { TransactionJournal } from '../../chain/transactionJournal.ts'
import type { PfsStore } from './store.ts'

/**
 * The pathfinding service's transaction journal (docs/decisions/0051), kept in its store under keys of its own: each
 * write is a step of `transact`, so it goes in the next batch with the service's other writes and resolves once that
 * batch is durable. As the monitoring service's (src/monitor/storeJournal.ts).
 */
export function pfsJournal(store: PfsStore): TransactionJournal {
  return {
    load: async () => store.journal(),
    put: async (entry) => {
      // Copied when the call is made, not when its batch runs: the queue may change its object meanwhile.
      const copy = structuredClone(entry)
      await store.transact((tx) => tx.putJournalEntry(copy))
    },
    delete: (nonce) => store.transact((tx) => tx.deleteJournalEntry(nonce)),
  }
}
