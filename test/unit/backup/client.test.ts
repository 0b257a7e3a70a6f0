// The client calls against real sockets: a backup server whose clock is an hour off, and servers that misbehave
// (silent, gone, a proxy's page, an endless answer, another owner's copy). Each call ends in time with a coded error.
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, describe, expect, test } from 'vitest'
import { backupKey, envelopeToJson, fetchBackup, open, pushBackup, seal } from '../../../src/backup/index.ts'
import { BACKUP_BASE_PATH, createBackupApp } from '../../../src/backup/server/app.ts'
import { openBackupStore } from '../../../src/backup/server/store.ts'
import { listen } from '../../../src/cli/httpServer.ts'
import { codeOf } from '../../support/errorCode.ts'
import { jsSecp256k1 } from '../../../src/protocol/secp256k1.ts'

const closers: (() => Promise<unknown>)[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => {})
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const utf8 = (s: string) => new TextEncoder().encode(s)
const key = await backupKey(jsSecp256k1, generatePrivateKey())
const envelope = await seal(key, { version: 1n, payload: utf8('state') })

/** An HTTP server answering every request with `answer`; resolves to its base URL (as a backup server's). */
async function httpServer(answer: Parameters<typeof createHttpServer>[1]): Promise<string> {
  const server: HttpServer = createHttpServer(answer)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closers.push(() => {
    const closed = new Promise((resolve) => server.close(resolve))
    server.closeAllConnections()
    return closed
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}${BACKUP_BASE_PATH}`
}

describe('pushBackup and fetchBackup', () => {
  test("sign a fetch again with the server's clock when it differs from ours by more than it allows", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-backup-'))
    dirs.push(dir)
    const store = await openBackupStore(join(dir, 'copies'))
    // The server's clock is an hour ahead of ours.
    const app = createBackupApp({ curve: jsSecp256k1, store, now: () => Date.now() + 3_600_000 })
    const server = await listen(app.fetch, { host: '127.0.0.1', port: 0 })
    closers.push(
      () => store.close(),
      () => server.close(100),
    )
    const url = `${server.url}${BACKUP_BASE_PATH}`
    expect(await pushBackup(url, envelope)).toEqual({ version: 1n, unchanged: false })
    expect(await open(key, (await fetchBackup(url, key))!)).toEqual({ version: 1n, payload: utf8('state') })
  })

  test('end with BACKUP_TIMEOUT when a server takes the connection and never answers, at the deadline given', async () => {
    const sockets: Socket[] = []
    const silent: TcpServer = createTcpServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    closers.push(async () => {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => silent.close(resolve))
    })
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}${BACKUP_BASE_PATH}`
    const started = performance.now()
    expect(await codeOf(() => pushBackup(url, envelope, { timeoutMs: 300 }))).toBe('BACKUP_TIMEOUT')
    expect(await codeOf(() => fetchBackup(url, key, { timeoutMs: 300 }))).toBe('BACKUP_TIMEOUT')
    expect(performance.now() - started).toBeLessThan(2_000)
  })

  test('end with BACKUP_TIMEOUT when the answer starts but its body never ends', async () => {
    const url = await httpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.write('{"version": "1",')
    })
    expect(await codeOf(() => pushBackup(url, envelope, { timeoutMs: 300 }))).toBe('BACKUP_TIMEOUT')
  })

  test('end with BACKUP_UNREACHABLE when nothing listens', async () => {
    const gone = createTcpServer()
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve))
    const port = (gone.address() as AddressInfo).port
    await new Promise((resolve) => gone.close(resolve))
    expect(await codeOf(() => pushBackup(`http://127.0.0.1:${port}${BACKUP_BASE_PATH}`, envelope))).toBe('BACKUP_UNREACHABLE')
  })

  test("end with BACKUP_BAD_ANSWER for what is not the protocol's answer: a proxy's page, an answer larger than any copy", async () => {
    const proxy = await httpServer((_request, response) => {
      response.writeHead(502, { 'content-type': 'text/html' })
      response.end('<html>Bad Gateway</html>')
    })
    expect(await codeOf(() => pushBackup(proxy, envelope))).toBe('BACKUP_BAD_ANSWER')
    expect(await codeOf(() => fetchBackup(proxy, key))).toBe('BACKUP_BAD_ANSWER')
    // An endless body: read up to the limit, then dropped.
    const endless = await httpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      const chunk = 'x'.repeat(64 * 1024)
      const write = () => {
        while (response.write(chunk)) {}
        response.once('drain', write)
      }
      write()
      response.once('close', () => response.removeAllListeners('drain'))
    })
    expect(await codeOf(() => fetchBackup(endless, key, { maxCopyBytes: 1024, timeoutMs: 5_000 }))).toBe('BACKUP_BAD_ANSWER')
    const declared = await httpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) })
      response.write('{')
    })
    expect(await codeOf(() => fetchBackup(declared, key, { maxCopyBytes: 1024 }))).toBe('BACKUP_BAD_ANSWER')
  })

  test("refuse a server's answer that is another owner's copy, or one changed since its owner signed it", async () => {
    const other = await backupKey(jsSecp256k1, generatePrivateKey())
    const othersCopy = envelopeToJson(await seal(other, { version: 1n, payload: utf8('not yours') }))
    const wrongOwner = await httpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(othersCopy))
    })
    expect(await codeOf(() => fetchBackup(wrongOwner, key))).toBe('BACKUP_OTHER_OWNER')
    const ours = envelopeToJson(envelope)
    const changed = await httpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ ...ours, version: '2' }))
    })
    expect(await codeOf(() => fetchBackup(changed, key))).toBe('BACKUP_BAD_SIGNATURE')
  })

  test("reject with the caller's reason when the caller aborts", async () => {
    const url = await httpServer(() => {})
    const controller = new AbortController()
    const pushing = pushBackup(url, envelope, { signal: controller.signal })
    controller.abort(new Error('the page is closing'))
    await expect(pushing).rejects.toThrow('the page is closing')
  })
})
