import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bytesToHex } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, expect, test } from 'vitest'
import { backupKey, fetchBackup, open, pushBackup, seal, type BackupKey } from '../../src/backup/index.ts'
import { startBackupServerProcess } from '../cli/backupServerProcess.ts'
import type { SluiceProcess } from '../cli/sluiceProcess.ts'
import { jsSecp256k1 } from '../../src/protocol/secp256k1.ts'

/**
 * The backup server's promise under kill -9: a copy it acknowledged is on disk. Owners push new versions of their
 * copies as fast as the server takes them (several owners at once, each one push after the other, as a node does);
 * the real `sluice backup-server` process is SIGKILLed mid-load, started again on its data directory, and every
 * owner's newest copy must be at least the last version acknowledged to it, and exactly what was sealed then.
 */
const OWNERS = 12
const ROUNDS = 3

const dataDir = mkdtempSync(join(tmpdir(), 'sluice-backup-crash-'))
let running: SluiceProcess | undefined
afterAll(async () => {
  running?.child.kill('SIGKILL')
  await running?.exited
  rmSync(dataDir, { recursive: true, force: true })
})

type Owner = { key: BackupKey; acked: bigint; next: bigint; sealed: Map<bigint, string> }

const start = () =>
  startBackupServerProcess(['--data-dir', dataDir, '--api', '127.0.0.1:0', '--pushes-per-minute', '1000000', '--requests-per-minute', '1000000'], dataDir)

test('nothing acknowledged is lost when the server is killed with SIGKILL under a load of pushes', { timeout: 120_000 }, async () => {
  const owners: Owner[] = await Promise.all(
    Array.from({ length: OWNERS }, async () => ({ key: await backupKey(jsSecp256k1, generatePrivateKey()), acked: 0n, next: 1n, sealed: new Map() })),
  )
  const figures: string[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const server = await start()
    running = server.sluice
    // After a restart: what it kept is what each owner goes on from.
    for (const owner of owners) {
      const copy = await fetchBackup(server.url, owner.key)
      const kept = copy ? await open(owner.key, copy) : undefined
      const version = kept?.version ?? 0n
      expect(version, `round ${round}: kept at least what was acknowledged`).toBeGreaterThanOrEqual(owner.acked)
      if (kept) expect(bytesToHex(kept.payload), `round ${round}: version ${version} is what was sealed`).toBe(owner.sealed.get(version))
      owner.next = version + 1n
      owner.acked = version
    }
    // Load: each owner pushes version after version until the server dies under it.
    let acknowledged = 0
    const t0 = performance.now()
    const pushing = owners.map(async (owner) => {
      for (;;) {
        const payload = crypto.getRandomValues(new Uint8Array(1024 + Math.floor(Math.random() * 7 * 1024)))
        const version = owner.next++
        owner.sealed.set(version, bytesToHex(payload))
        try {
          const { version: held } = await pushBackup(server.url, await seal(owner.key, { version, payload }), { timeoutMs: 10_000 })
          expect(held).toBe(version)
          owner.acked = version
          acknowledged++
        } catch (e) {
          // The server died under this push; one left without an answer in time counts as not acknowledged.
          const code = (e as { code?: string }).code
          if (code === 'BACKUP_UNREACHABLE') return
          if (code !== 'BACKUP_TIMEOUT') throw e
        }
      }
    })
    // Killed somewhere in the middle of the load, once it has acknowledged something.
    await new Promise((r) => setTimeout(r, 300 + Math.random() * 1200))
    while (acknowledged === 0) await new Promise((r) => setTimeout(r, 10))
    server.sluice.child.kill('SIGKILL')
    const elapsed = performance.now() - t0
    expect((await server.sluice.exited).signal).toBe('SIGKILL')
    await Promise.all(pushing)
    figures.push(`${acknowledged} in ${Math.round(elapsed)} ms (${Math.round((acknowledged / elapsed) * 1000)}/s)`)
  }
  // And once more after the last kill.
  const server = await start()
  running = server.sluice
  for (const owner of owners) {
    const kept = await open(owner.key, (await fetchBackup(server.url, owner.key))!)
    expect(kept.version).toBeGreaterThanOrEqual(owner.acked)
    expect(bytesToHex(kept.payload)).toBe(owner.sealed.get(kept.version))
  }
  server.sluice.child.kill('SIGTERM')
  await server.sluice.exited
  console.log(`backup server under kill -9: ${OWNERS} owners; acknowledged pushes before each kill: ${figures.join(', ')}`)
})
