// A second Node process for the node journal's test: a node's engine over LevelDB and its journal, writing entries
// one after another, each line printed once its put or delete has resolved (`put <nonce>`, `delete <nonce>`); the
// parent kills it with SIGKILL.
import type { Address } from 'viem'
import { Engine } from '../../../../../src/node/runtime/engine.ts'
import { nodeJournal } from '../../../../../src/node/runtime/nodeJournal.ts'
import { defaultContext, initialState } from '../../../../../src/protocol/state/access.ts'
import { openLevelStorage } from '../../../../../src/storage/levelStorage.ts'
import { journalEntry } from '../../../storage/support/records.ts'

const [dataDir, registry, address] = process.argv.slice(2) as [string, Address, Address]
const storage = await openLevelStorage({ chainId: 1n, registry, address }, { dataDir })
const loaded = await storage.load()
const engine = new Engine({
  state: initialState({ address, chainId: 1n, blockNumber: 0n }),
  seq: 0,
  ctx: defaultContext,
  storage,
  now: Date.now,
  onApplied: () => {},
})
const journal = nodeJournal(engine, loaded.chainTransactions)
let nonce = ((await journal.load()).at(-1)?.nonce ?? -1) + 1
// As a queue does: each transaction's entry put before its broadcast, put again with a second attempt, and the one two
// nonces back deleted once buried.
for (;;) {
  await journal.put(journalEntry(nonce))
  process.stdout.write(`put ${nonce}\n`)
  await journal.put(journalEntry(nonce, 2))
  process.stdout.write(`put ${nonce} 2\n`)
  if (nonce >= 2) {
    await journal.delete(nonce - 2)
    process.stdout.write(`delete ${nonce - 2}\n`)
  }
  nonce++
}
