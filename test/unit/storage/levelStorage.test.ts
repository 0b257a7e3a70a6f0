import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { deserialize, serialize } from 'node:v8'
import { ClassicLevel } from 'classic-level'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { levelLocation, openLevelStorage } from '../../../src/storage/levelStorage.ts'
import { STORAGE_SCHEMA_VERSION, StorageError, StorageVersionError, type StorageIdentity } from '../../../src/storage/storage.ts'
import { describeStorageContract } from './storageContract.ts'
import { change, journalEntry, newChannelKey, newIdentity, outbox, paymentsToIndex, randomAddress, received, sentLock, sentProof } from './support/records.ts'

let dataDir = ''
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'sluice-level-'))
})
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true })
})

describeStorageContract('LevelDB', {
  open: (identity) => openLevelStorage(identity, { dataDir }),
  destroy: (identity) => rm(levelLocation(identity, dataDir), { recursive: true, force: true }),
  singleInstance: true,
})

const child = new URL('./support/levelChild.ts', import.meta.url).pathname
// `--import tsx` resolves from the working directory: the repository root, wherever the tests were started.
const repoRoot = new URL('../../../', import.meta.url).pathname

/** Runs the child script; `onLine` sees each complete line of its output as it comes. */
function runChild(args: string[], onLine: (line: string, kill: () => void) => void = () => {}): Promise<{ lines: string[]; signal: NodeJS.Signals | null }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] })
  const lines: string[] = []
  let partial = ''
  proc.stdout.setEncoding('utf8')
  proc.stdout.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      onLine(line, () => proc.kill('SIGKILL'))
    }
  })
  return new Promise((resolve, reject) => {
    proc.on('error', reject)
    proc.on('close', (code, signal) => (signal === null && code !== 0 ? reject(new Error(`child exited with ${code}`)) : resolve({ lines, signal })))
  })
}

const childArgs = (mode: string, identity: StorageIdentity) => [mode, dataDir, identity.chainId.toString(), identity.registry, identity.address]

test('the store lives in <dataDir>/<chainId>-<registry>-<address>, lower case', async () => {
  const identity = newIdentity()
  const storage = await openLevelStorage(identity, { dataDir })
  await storage.close()
  expect(await readdir(dataDir)).toContain(`31337-${identity.registry.toLowerCase()}-${identity.address.toLowerCase()}`)
  expect(levelLocation(identity, dataDir)).toBe(join(dataDir, `31337-${identity.registry.toLowerCase()}-${identity.address.toLowerCase()}`))
})

test('every commit a killed process saw resolve is there after kill -9, and the log is a gap-free prefix', async () => {
  const identity = newIdentity()
  const committed: number[] = []
  // Twice: the second process resumes the log of the first and is killed mid-loop too.
  for (const killAfter of [150, 300]) {
    const { signal } = await runChild(childArgs('commit-loop', identity), (line, kill) => {
      committed.push(Number(line))
      if (committed.length === killAfter) kill()
    })
    expect(signal).toBe('SIGKILL')
  }
  // What the parent saw is in order. A commit can land and its process die before it says so, so the second
  // process may start after a seq the parent never saw: only the store's log must be gap-free.
  expect(committed).toEqual([...committed].sort((x, y) => x - y))
  expect(new Set(committed).size).toBe(committed.length)
  const storage = await openLevelStorage(identity, { dataDir })
  const loaded = await storage.load()
  await storage.close()
  const seqs = loaded.changes.map((c) => c.seq)
  const last = seqs.at(-1)!
  expect(last).toBeGreaterThanOrEqual(committed.at(-1)!)
  expect(seqs).toEqual(Array.from({ length: last }, (_, i) => i + 1))
  // Every commit a process saw resolve survived its kill -9.
  for (const seq of committed) expect(seqs).toContain(seq)
  // Each commit landed whole: the outbox and meta belong to the last change, never to an earlier or later one.
  expect(loaded.outbox.map((r) => r.key)).toEqual([`m${last}`])
  expect(loaded.meta.syncedBlock).toBe(BigInt(last))
})

test('a relaxed commit a killed process saw resolve is there after kill -9 too (not synced: only a crash of the machine may lose it)', async () => {
  const identity = newIdentity()
  const committed: number[] = []
  const { signal } = await runChild(childArgs('relaxed-loop', identity), (line, kill) => {
    committed.push(Number(line))
    if (committed.length === 200) kill()
  })
  expect(signal).toBe('SIGKILL')
  const storage = await openLevelStorage(identity, { dataDir })
  const loaded = await storage.load()
  await storage.close()
  const last = loaded.changes.at(-1)!.seq
  expect(last).toBeGreaterThanOrEqual(committed.at(-1)!)
  // Each printed seq's acknowledgement (of the message before it) is applied: at most the last two messages are
  // left, the last one's and, if the process died between its two commits, the one before.
  const left = loaded.outbox.map((r) => r.key)
  expect(left).toContain(`m${last}`)
  expect(left.every((key) => key === `m${last}` || key === `m${last - 1}`)).toBe(true)
  // The last seq the process printed had its relaxed commit resolve: if nothing came after it, only its message is left.
  if (last === committed.at(-1)) expect(left).toEqual([`m${last}`])
})

test('a second process cannot open a store this one holds, and can once it is closed', async () => {
  const identity = newIdentity()
  const storage = await openLevelStorage(identity, { dataDir })
  await storage.commit({ changes: [change(1)] })
  expect((await runChild(childArgs('try-open', identity))).lines).toEqual(['StorageLockedError'])
  await storage.close()
  expect((await runChild(childArgs('try-open', identity))).lines).toEqual(['opened'])
})

test('a store written by a newer schema is refused with StorageVersionError, a foreign LevelDB with StorageError', async () => {
  const newer = newIdentity()
  await (await openLevelStorage(newer, { dataDir })).close()
  const db = new ClassicLevel<string, Uint8Array>(levelLocation(newer, dataDir), { valueEncoding: 'view' })
  const meta = { ...newer, schemaVersion: STORAGE_SCHEMA_VERSION + 1, syncedBlock: 0n, createdAt: 0 }
  await db.put('meta', serialize(meta))
  await db.close()
  await expect(openLevelStorage(newer, { dataDir })).rejects.toBeInstanceOf(StorageVersionError)

  const foreign = newIdentity()
  const other = new ClassicLevel<string, string>(levelLocation(foreign, dataDir))
  await other.put('someone', 'else')
  await other.close()
  await expect(openLevelStorage(foreign, { dataDir })).rejects.toThrow(StorageError)
  await expect(openLevelStorage(foreign, { dataDir })).rejects.toThrow(/not Sluice/)
})

test.each([1, 2, 3, 4])(
  'a store of schema version %i is upgraded: its rows are kept, its meta says the current version, and the new rows work',
  async (version) => {
    const identity = newIdentity()
    const ck = newChannelKey()
    const [oldProof, oldLock] = [sentProof(ck, 1n), sentLock(ck, 1n)]
    const [token, target] = [randomAddress(), randomAddress()]
    const paid = paymentsToIndex(token, target)
    const [t, p] = [token.toLowerCase(), target.toLowerCase()]
    const paidRows = paid.flatMap((row) => {
      const seq = row.seq.toString().padStart(16, '0')
      // Version 4 indexed sent payments by target and identifier too.
      const sentIdentifier =
        version >= 4 && row.event !== 'EventPaymentReceivedSuccess' ? [`psi!${p}!${row.identifier.toString().padStart(20, '0')}!${seq}`] : []
      return [`p!${seq}`, `pt!${t}!${seq}`, `pp!${p}!${seq}`, `ptp!${t}!${p}!${seq}`, ...sentIdentifier].map((key, i) => ({
        type: 'put' as const,
        key,
        value: i === 0 ? serialize(row) : new Uint8Array(0),
      }))
    })
    // As Sluice with that schema version left it (its key layout, frozen here; version 2 added sent proofs and locks,
    // 3 received messages, 4 the index of sent payments).
    const old = new ClassicLevel<string, Uint8Array>(levelLocation(identity, dataDir), { valueEncoding: 'view' })
    await old.batch([
      { type: 'put', key: 'meta', value: serialize({ ...identity, schemaVersion: version, syncedBlock: 7n, createdAt: 1 }) },
      { type: 'put', key: 'c!0000000000000001', value: serialize(change(1)) },
      { type: 'put', key: 'o!a', value: serialize(outbox('a')) },
      ...paidRows,
      ...(version >= 2
        ? [
            { type: 'put' as const, key: `sp!${ck}!${oldProof.balanceHash.toLowerCase()}`, value: serialize(oldProof) },
            { type: 'put' as const, key: `sl!${ck}!00000000000000000001!${oldLock.secrethash.toLowerCase()}`, value: serialize(oldLock) },
          ]
        : []),
    ])
    await old.close()
    const storage = await openLevelStorage(identity, { dataDir })
    const loaded = await storage.load()
    expect(loaded.meta).toEqual({ ...identity, schemaVersion: STORAGE_SCHEMA_VERSION, syncedBlock: 7n, createdAt: 1 })
    expect(loaded.changes).toEqual([change(1)])
    expect(loaded.outbox).toEqual([outbox('a')])
    expect(await storage.sentPayment(target, 9n)).toEqual(paid[1])
    expect(await storage.sentPayment(target, 10n)).toBeUndefined()
    expect(await storage.payments({ token, partner: target })).toEqual(paid)
    if (version >= 2) {
      expect(await storage.sentProof(ck, oldProof.balanceHash)).toEqual(oldProof)
      expect(await storage.sentLocks(ck, 1n)).toEqual([oldLock])
    }
    // No transaction journal before version 5: the upgraded store starts with none.
    expect(loaded.chainTransactions).toEqual([])
    const [proof, lock, message] = [sentProof(ck, 12n), sentLock(ck, 12n), received(ck, 12n)]
    const journal = [journalEntry(12), journalEntry(3, 2)]
    await storage.commit({ changes: [change(2)], sentProofs: [proof], sentLocks: [lock], received: [message], chainTransactions: { put: journal } })
    expect((await storage.load()).chainTransactions).toEqual([journal[1], journal[0]])
    expect(await storage.sentProof(ck, proof.balanceHash)).toEqual(proof)
    expect(await storage.sentLocks(ck, 12n)).toEqual(version >= 2 ? [oldLock, lock] : [lock])
    expect(await storage.receivedMessage(ck, 12n)).toEqual(message)
    await storage.close()
    const raw = new ClassicLevel<string, Uint8Array>(levelLocation(identity, dataDir), { valueEncoding: 'view' })
    expect((deserialize((await raw.get('meta'))!) as { schemaVersion: number }).schemaVersion).toBe(STORAGE_SCHEMA_VERSION)
    // The key layout: received messages by channel and padded nonce, sent proofs by channel and balance hash, sent
    // locks by channel, padded addedNonce and secret hash.
    expect(await raw.keys({ gte: 'r', lt: 's' }).all()).toEqual([`rm!${ck}!00000000000000000012`])
    // The journal by nonce, 16 digits: key order is nonce order.
    expect(await raw.keys({ gte: 'ctx!', lt: 'ctx"' }).all()).toEqual(['ctx!0000000000000003', 'ctx!0000000000000012'])
    const keys = await raw.keys({ gte: 's', lt: 't' }).all()
    const proofKeys = (version >= 2 ? [oldProof, proof] : [proof]).map((p) => `sp!${ck}!${p.balanceHash.toLowerCase()}`).sort()
    expect(keys).toEqual([
      ...(version >= 2 ? [`sl!${ck}!00000000000000000001!${oldLock.secrethash.toLowerCase()}`] : []),
      `sl!${ck}!00000000000000000012!${lock.secrethash.toLowerCase()}`,
      ...proofKeys,
    ])
    await raw.close()
  },
)
