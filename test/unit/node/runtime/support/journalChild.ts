// A second Node process for the node journal's test: a node's engine over LevelDB and its journal, written as a queue
// does until the parent kills it with SIGKILL (test/support/journalWriter.ts).
import type { Address } from 'viem'
import { Engine } from '../../../../../src/node/runtime/engine.ts'
import { nodeJournal } from '../../../../../src/node/runtime/nodeJournal.ts'
import { defaultContext, initialState } from '../../../../../src/protocol/state/access.ts'
import { openLevelStorage } from '../../../../../src/storage/levelStorage.ts'
import { writeUntilKilled } from '../../../../support/journalWriter.ts'

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
await writeUntilKilled(nodeJournal(engine, loaded.chainTransactions))
