import type { JournalEntry, TransactionJournal } from '../../chain/transactionJournal.ts'
import type { Engine } from './engine.ts'

/**
 * The node's transaction journal (docs/decisions/0051): kept in the node's store, written through the engine so that
 * an entry goes in the next commit with whatever else is committed (group commit) and `put` resolves once that commit
 * is durable. `load` gives what the store held at start (`Loaded.chainTransactions`) with what was written since, as
 * durable: a write shows once its commit resolved, in the order the writes were made.
 */
export function nodeJournal(engine: Pick<Engine, 'writeJournal'>, loaded: JournalEntry[]): TransactionJournal {
  const entries = new Map<number, JournalEntry>(loaded.map((entry) => [entry.nonce, structuredClone(entry)]))
  return {
    load: async () => [...entries.values()].sort((a, b) => a.nonce - b.nonce).map((entry) => structuredClone(entry)),
    put: async (entry) => {
      // Copied before the call returns: the queue may change its object while the commit is under way.
      const copy = structuredClone(entry)
      await engine.writeJournal({ put: [copy] })
      entries.set(copy.nonce, copy)
    },
    delete: async (nonce) => {
      await engine.writeJournal({ delete: [nonce] })
      entries.delete(nonce)
    },
  }
}
