// A second Node process for the LevelDB tests: `commit-loop` commits forever and prints each seq once its commit
// has resolved (the parent kills it with SIGKILL); `relaxed-loop` the same with each acknowledgement in a relaxed
// commit of its own; `try-open` opens the store and prints the outcome.
import { openLevelStorage } from '../../../../src/storage/levelStorage.ts'
import type { Address } from 'viem'
import { change, outbox } from './records.ts'

const [mode, dataDir, chainId, registry, address] = process.argv.slice(2)
const identity = { chainId: BigInt(chainId!), registry: registry as Address, address: address as Address }

if (mode === 'try-open') {
  try {
    const storage = await openLevelStorage(identity, { dataDir: dataDir! })
    await storage.close()
    process.stdout.write('opened\n')
  } catch (e) {
    process.stdout.write(`${(e as Error).name}\n`)
  }
} else if (mode === 'commit-loop') {
  const storage = await openLevelStorage(identity, { dataDir: dataDir! })
  let seq = ((await storage.load()).changes.at(-1)?.seq ?? 0) + 1
  // A payment-sized commit: the change, the message it queues, and the ack of the previous one.
  for (;;) {
    await storage.commit({ changes: [change(seq)], outbox: { put: [outbox(`m${seq}`)], delete: [`m${seq - 1}`] }, meta: { syncedBlock: BigInt(seq) } })
    process.stdout.write(`${seq}\n`)
    seq++
  }
} else if (mode === 'relaxed-loop') {
  const storage = await openLevelStorage(identity, { dataDir: dataDir! })
  let seq = ((await storage.load()).changes.at(-1)?.seq ?? 0) + 1
  // As the engine writes a payment's acknowledgement: the change and its message synced, then the peer's
  // acknowledgement of the previous message relaxed (not synced) in a commit of its own.
  for (;;) {
    await storage.commit({ changes: [change(seq)], outbox: { put: [outbox(`m${seq}`)] }, meta: { syncedBlock: BigInt(seq) } })
    await storage.commit({ relaxed: true, outbox: { delete: [`m${seq - 1}`] } })
    process.stdout.write(`${seq}\n`)
    seq++
  }
} else {
  throw new Error(`unknown mode ${mode}`)
}
