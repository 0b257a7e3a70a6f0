import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { backupKey, backupServerStatus, fetchBackup, open, pushBackup, seal } from '../../src/backup/index.ts'
import { startPostgres, type TestPostgres } from '../support/postgres.ts'
import { startBackupServerProcess } from './backupServerProcess.ts'
import type { SluiceProcess } from './sluiceProcess.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

// Two `sluice backup-server` processes on one PostgreSQL database (docs/decisions/0077): a copy pushed to one is
// fetched from the other, and each push is decided in the transaction that writes it.

const dirs: string[] = []
const started: SluiceProcess[] = []
let postgres: TestPostgres
beforeAll(async () => {
  postgres = await startPostgres()
}, 60_000)
afterAll(async () => {
  for (const p of started) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL')
  await postgres?.stop()
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
})

async function startServer(database: string) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-backups-'))
  dirs.push(dir)
  const server = await startBackupServerProcess(['--database', database, '--api', '127.0.0.1:0'], dir)
  started.push(server.sluice)
  return server
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'kept',
    (e: { code?: string }) => e.code,
  )

describe('two backup servers on one database', () => {
  test('a copy pushed to one is fetched from the other; an older or a second copy of one version is refused whichever server gets it, even at once', async () => {
    const database = await postgres.createDatabase('backups')
    const [a, b] = await Promise.all([startServer(database), startServer(database)])
    const key = await backupKey(jsSecp256k1, generatePrivateKey())
    const copy = (version: bigint, text: string) => seal(key, { version, payload: new TextEncoder().encode(text) })

    await pushBackup(a.url, await copy(1n, 'first'))
    expect(await open(key, (await fetchBackup(b.url, key))!)).toMatchObject({ version: 1n })
    await pushBackup(b.url, await copy(2n, 'second'))
    expect(await refusal(pushBackup(a.url, await copy(1n, 'first')))).toBe('BACKUP_STALE')

    // Two different copies of version 3 at once, one to each server: exactly one is kept, the other is a conflict.
    for (let round = 3n; round < 13n; round++) {
      const outcomes = await Promise.all([refusal(pushBackup(a.url, await copy(round, 'a'))), refusal(pushBackup(b.url, await copy(round, 'b')))])
      expect(outcomes.sort()).toEqual(['BACKUP_CONFLICT', 'kept'])
    }
    const held = await open(key, (await fetchBackup(a.url, key))!)
    expect(held.version).toBe(12n)
    expect(await open(key, (await fetchBackup(b.url, key))!)).toEqual(held)
    // The totals are counted in the database: each server shows the one copy.
    await expect.poll(async () => (await backupServerStatus(b.url)).copies).toBe(1)
    expect((await backupServerStatus(a.url)).copies).toBe(1)
    for (const server of [a, b]) {
      server.sluice.child.kill('SIGTERM')
      expect((await server.sluice.exited).code).toBe(0)
    }
  })
})
