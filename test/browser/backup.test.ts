// The backup envelope and the client calls in Chromium, against a real `sluice backup-server` process on another
// origin (127.0.0.1:<its port>, while this page is on localhost): WebCrypto seals and opens, fetch crosses with
// CORS, and every call ends in time with a coded error when the server misbehaves.
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { commands } from 'vitest/browser'
import { backupKey, backupServerStatus, fetchBackup, open, pushBackup, seal, type BackupKey } from '../../src/backup/index.ts'
import { fetchAuthorization } from '../../src/backup/client.ts'
import { wasmOrJsSecp256k1 } from '../../src/crypto/curveEngines.ts'
import type { Secp256k1Engine } from '../../src/protocol/secp256k1.ts'
import { codeOf } from '../support/errorCode.ts'

const utf8 = (s: string) => new TextEncoder().encode(s)
let url: string
let key: BackupKey
let curve: Secp256k1Engine

beforeAll(async () => {
  ;[url, curve] = await Promise.all([commands.startBackupServer(), wasmOrJsSecp256k1()])
  key = await backupKey(curve, generatePrivateKey())
}, 60_000)

afterAll(() => commands.stopBackupServers())

describe('backup copies from the page', () => {
  test('a copy sealed in the page is pushed, fetched back by its owner and opened; the server is another origin', async () => {
    expect(new URL(url).origin).not.toBe(location.origin)
    expect(await backupServerStatus(url)).toMatchObject({ service: 'sluice-backup', format: 'sluice-backup/1' })
    expect(await fetchBackup(url, key)).toBeUndefined()
    const state = utf8(JSON.stringify({ channels: [{ nonce: 3 }] }))
    expect(await pushBackup(url, await seal(key, { version: 1n, payload: state }))).toEqual({ version: 1n, unchanged: false })
    const copy = await fetchBackup(url, key)
    expect(copy).toMatchObject({ address: key.address, version: 1n })
    expect(await open(key, copy!)).toEqual({ version: 1n, payload: state })
    // Another key: no copy of its own, and this one does not open for it.
    const other = await backupKey(curve, generatePrivateKey())
    expect(await fetchBackup(url, other)).toBeUndefined()
    expect(await codeOf(() => open(other, copy!))).toBe('BACKUP_OTHER_OWNER')
  })

  test('the newest wins: an older copy is refused with BACKUP_STALE, the same copy again is acknowledged unchanged', async () => {
    const [v2, v3] = await Promise.all([seal(key, { version: 2n, payload: utf8('2') }), seal(key, { version: 3n, payload: utf8('3') })])
    await pushBackup(url, v3)
    await expect(pushBackup(url, v2)).rejects.toMatchObject({ code: 'BACKUP_STALE', status: 409 })
    expect(await pushBackup(url, v3)).toEqual({ version: 3n, unchanged: true })
    expect(await open(key, (await fetchBackup(url, key))!)).toEqual({ version: 3n, payload: utf8('3') })
  })

  test("the server's refusals reach the page with their codes and its clock (Date is exposed to other origins)", async () => {
    const expired = await fetch(`${url}/copies/${key.address}`, { headers: { authorization: fetchAuthorization(key, Math.floor(Date.now() / 1000) - 3600) } })
    expect(expired.status).toBe(401)
    expect(await expired.json()).toMatchObject({ code: 'BACKUP_REQUEST_EXPIRED' })
    expect(Date.parse(expired.headers.get('date')!)).toBeGreaterThan(Date.now() - 60_000)
  })

  test('a server that never answers ends in BACKUP_TIMEOUT at the deadline, one that is gone in BACKUP_UNREACHABLE', async () => {
    const [silent, gone] = await Promise.all([commands.silentBackupServer(), commands.goneBackupServer()])
    const copy = await seal(key, { version: 4n, payload: utf8('4') })
    const started = performance.now()
    expect(await codeOf(() => pushBackup(silent, copy, { timeoutMs: 500 }))).toBe('BACKUP_TIMEOUT')
    expect(await codeOf(() => fetchBackup(silent, key, { timeoutMs: 500 }))).toBe('BACKUP_TIMEOUT')
    expect(performance.now() - started).toBeLessThan(3_000)
    expect(await codeOf(() => pushBackup(gone, copy))).toBe('BACKUP_UNREACHABLE')
    expect(await codeOf(() => fetchBackup(gone, key))).toBe('BACKUP_UNREACHABLE')
  })
})
