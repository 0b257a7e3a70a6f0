// The backup server over real HTTP (127.0.0.1, a free port) on a real LevelDB store in a temporary directory.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bytesToHex, type Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, describe, expect, test } from 'vitest'
import { backupKey, envelopeToJson, fetchBackup, open, pushBackup, seal, type BackupKey, type Envelope } from '../../../../src/backup/index.ts'
import { fetchAuthorization } from '../../../../src/backup/client.ts'
import { signedCopyBytes } from '../../../../src/backup/format.ts'
import type { BackupLimits } from '../../../../src/backup/server/app.ts'
import { serveBackups, type ServedBackups } from '../../../../src/cli/backupServer.ts'
import { signPackedSync } from '../../../../src/protocol/signature.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const dirs: string[] = []
const servers: ServedBackups[] = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close(100).catch(() => {})))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function start(limits: Partial<BackupLimits> = {}, dataDir?: string): Promise<ServedBackups & { dataDir: string }> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'sluice-backup-'))
  if (!dataDir) dirs.push(dir)
  const served = await serveBackups({ dataDir: dir, host: '127.0.0.1', port: 0, limits: { pushesPerMinute: 10_000, requestsPerMinute: 100_000, ...limits } })
  servers.push(served)
  return { ...served, dataDir: dir }
}

const utf8 = (s: string) => new TextEncoder().encode(s)
const newKey = async () => backupKey(jsSecp256k1, generatePrivateKey())

type Answer = { status: number; body: any; headers: Headers }

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const r = await fetch(url, init)
  const text = await r.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: r.status, body, headers: r.headers }
}

const put = (server: ServedBackups, address: Address, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  call(`${server.url}/copies/${address}`, { method: 'PUT', headers, body: typeof body === 'string' ? body : JSON.stringify(body) })

const getCopy = (server: ServedBackups, key: BackupKey, headers?: Record<string, string>) =>
  call(`${server.url}/copies/${key.address}`, { headers: headers ?? { authorization: fetchAuthorization(key, Math.floor(Date.now() / 1000)) } })

const copyJson = (e: Envelope) => envelopeToJson(e)

describe('the backup server', () => {
  test('keeps a signed copy and gives it back to its owner, byte for byte', async () => {
    const server = await start()
    const key = await newKey()
    const envelope = await seal(key, { version: 1n, payload: utf8('state 1') })
    expect(await put(server, key.address, copyJson(envelope))).toMatchObject({ status: 200, body: { address: key.address, version: '1', unchanged: false } })
    const got = await getCopy(server, key)
    expect(got.status).toBe(200)
    expect(got.headers.get('cache-control')).toBe('no-store')
    expect(got.body).toEqual(copyJson(envelope))
    expect((await call(`${server.url}/status`)).body).toMatchObject({
      service: 'sluice-backup',
      format: 'sluice-backup/1',
      copies: 1,
      bytes: expect.any(Number),
    })
    // The client calls do the same, and open gives the payload back.
    const fetched = await fetchBackup(server.url, key)
    expect(await open(key, fetched!)).toEqual({ version: 1n, payload: utf8('state 1') })
  })

  test("refuses an unsigned copy (401), a forged one or one changed since it was signed (403), one in another address's place (400)", async () => {
    const server = await start()
    const [key, thief] = await Promise.all([newKey(), newKey()])
    const envelope = await seal(key, { version: 1n, payload: utf8('p') })
    const json = copyJson(envelope)
    const { signature: _, ...unsigned } = json
    expect(await put(server, key.address, unsigned)).toMatchObject({ status: 401, body: { code: 'BACKUP_UNSIGNED' } })
    const forged = { ...json, signature: signPackedSync(jsSecp256k1, thief.privateKey, signedCopyBytes(key.address, 1n, envelope.ciphertext)) }
    expect(await put(server, key.address, forged)).toMatchObject({ status: 403, body: { code: 'BACKUP_BAD_SIGNATURE' } })
    const flipped = { ...json, ciphertext: `${json.ciphertext.slice(0, -1)}${json.ciphertext.endsWith('0') ? '1' : '0'}` }
    expect(await put(server, key.address, flipped)).toMatchObject({ status: 403, body: { code: 'BACKUP_BAD_SIGNATURE' } })
    expect(await put(server, key.address, { ...json, version: '2' })).toMatchObject({ status: 403, body: { code: 'BACKUP_BAD_SIGNATURE' } })
    expect(await put(server, thief.address, json)).toMatchObject({ status: 400, body: { code: 'BACKUP_MALFORMED' } })
    // Nothing was kept.
    expect(await getCopy(server, key)).toMatchObject({ status: 404, body: { code: 'NO_BACKUP' } })
    expect((await call(`${server.url}/status`)).body).toMatchObject({ copies: 0, bytes: 0 })
  })

  test('keeps the newest: an older copy is 409 BACKUP_STALE, another under the same version 409 BACKUP_CONFLICT, the same copy again is acknowledged unchanged', async () => {
    const server = await start()
    const key = await newKey()
    const [v1, v2, v2other, v3] = await Promise.all([
      seal(key, { version: 1n, payload: utf8('1') }),
      seal(key, { version: 2n, payload: utf8('2') }),
      seal(key, { version: 2n, payload: utf8('2 but other') }),
      seal(key, { version: 3n, payload: utf8('3') }),
    ])
    expect((await put(server, key.address, copyJson(v2))).status).toBe(200)
    expect(await put(server, key.address, copyJson(v1))).toMatchObject({
      status: 409,
      body: { code: 'BACKUP_STALE', errors: expect.stringContaining('version 2') },
    })
    expect(await put(server, key.address, copyJson(v2other))).toMatchObject({ status: 409, body: { code: 'BACKUP_CONFLICT' } })
    // A resend after a lost answer (a replay of the newest copy) changes nothing and says so.
    expect(await put(server, key.address, copyJson(v2))).toMatchObject({ status: 200, body: { version: '2', unchanged: true } })
    expect((await getCopy(server, key)).body).toEqual(copyJson(v2))
    // A replay of an older copy after a newer one is stale.
    expect((await put(server, key.address, copyJson(v3))).status).toBe(200)
    expect(await put(server, key.address, copyJson(v2))).toMatchObject({ status: 409, body: { code: 'BACKUP_STALE' } })
    expect((await getCopy(server, key)).body).toEqual(copyJson(v3))
    // Through the client: the server's code is the error's code.
    await expect(pushBackup(server.url, v1)).rejects.toMatchObject({ code: 'BACKUP_STALE', status: 409 })
    expect(await pushBackup(server.url, v3)).toEqual({ version: 3n, unchanged: true })
  })

  test('the newest wins when copies of many versions arrive at once, in any order', async () => {
    const server = await start()
    const key = await newKey()
    const copies = await Promise.all(Array.from({ length: 40 }, (_, i) => seal(key, { version: BigInt(i + 1), payload: utf8(`state ${i + 1}`) })))
    const shuffled = copies.map((c) => ({ c, r: Math.random() })).sort((a, b) => a.r - b.r)
    const answers = await Promise.all(shuffled.map(({ c }) => put(server, key.address, copyJson(c))))
    for (const a of answers) expect([200, 409]).toContain(a.status)
    for (const a of answers.filter((x) => x.status === 409)) expect(a.body.code).toBe('BACKUP_STALE')
    // Acknowledged versions rise in the order they were kept; the last one acknowledged is the newest.
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(0)
    expect((await getCopy(server, key)).body).toEqual(copyJson(copies[39]!))
    expect((await call(`${server.url}/status`)).body.copies).toBe(1)
  })

  test('refuses an oversized copy with 413, whether its size is announced or streamed, and keeps its state', async () => {
    const server = await start({ maxCopyBytes: 1024 })
    const key = await newKey()
    const fits = await seal(key, { version: 1n, payload: new Uint8Array(1024 - 28) })
    const tooBig = await seal(key, { version: 2n, payload: new Uint8Array(1024 - 27) })
    expect((await put(server, key.address, copyJson(fits))).status).toBe(200)
    expect(await put(server, key.address, copyJson(tooBig))).toMatchObject({ status: 413, body: { code: 'BACKUP_TOO_LARGE' } })
    const huge = JSON.stringify({ ...copyJson(tooBig), ciphertext: bytesToHex(new Uint8Array(100_000)) })
    expect(await put(server, key.address, huge)).toMatchObject({ status: 413, body: { code: 'BACKUP_TOO_LARGE' } })
    // Chunked, without a Content-Length: counted as it comes.
    const stream = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(utf8(huge.slice(i * 10_000, (i + 1) * 10_000)))
        controller.enqueue(utf8(huge.slice(100_000)))
        controller.close()
      },
    })
    const chunked = await call(`${server.url}/copies/${key.address}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit)
    expect(chunked).toMatchObject({ status: 413, body: { code: 'BACKUP_TOO_LARGE' } })
    expect((await getCopy(server, key)).body).toEqual(copyJson(fits))
  })

  test('refuses malformed requests with 400 (415 for a body that is not JSON, 404 for an address that is not one)', async () => {
    const server = await start()
    const key = await newKey()
    const json = copyJson(await seal(key, { version: 1n, payload: utf8('p') }))
    expect(await put(server, key.address, JSON.stringify(json), { 'content-type': 'text/plain' })).toMatchObject({
      status: 415,
      body: { code: 'UNSUPPORTED_MEDIA_TYPE' },
    })
    const malformed: unknown[] = [
      '{',
      '',
      '[]',
      'null',
      { ...json, version: 1 },
      { ...json, format: 'other' },
      { ...json, extra: true },
      { ...json, ciphertext: '0x00' },
    ]
    for (const body of malformed)
      expect(await put(server, key.address, typeof body === 'string' ? body : JSON.stringify(body)), JSON.stringify(body)).toMatchObject({
        status: 400,
        body: { code: 'BACKUP_MALFORMED', errors: expect.any(String) },
      })
    expect(await put(server, key.address.toLowerCase() as Address, json)).toMatchObject({ status: 404 })
    expect(await call(`${server.url}/nothing`)).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } })
    expect((await call(`${server.url}/status`)).body.copies).toBe(0)
  })

  test('gives a copy to its owner only: unsigned 401, stale or future request 401, signed by another 403; says nothing to others about what it holds', async () => {
    const server = await start({ fetchWindowSeconds: 60 })
    const [key, other] = await Promise.all([newKey(), newKey()])
    const now = Math.floor(Date.now() / 1000)
    // Nothing held: the owner learns it (404), anyone else gets the same 401/403 as when a copy is held.
    expect(await getCopy(server, key)).toMatchObject({ status: 404, body: { code: 'NO_BACKUP' } })
    expect(await fetchBackup(server.url, key)).toBeUndefined()
    const refusals = async () => [
      await getCopy(server, key, {}),
      await getCopy(server, key, { authorization: 'Bearer something' }),
      await getCopy(server, key, { authorization: fetchAuthorization(key, now - 120) }),
      await getCopy(server, key, { authorization: fetchAuthorization(key, now + 120) }),
      await getCopy(server, key, { authorization: fetchAuthorization(other, now).replace(other.address, key.address) }),
    ]
    const expected = [
      { status: 401, body: { code: 'BACKUP_UNSIGNED' } },
      { status: 401, body: { code: 'BACKUP_UNSIGNED' } },
      { status: 401, body: { code: 'BACKUP_REQUEST_EXPIRED' } },
      { status: 401, body: { code: 'BACKUP_REQUEST_EXPIRED' } },
      { status: 403, body: { code: 'BACKUP_BAD_SIGNATURE' } },
    ]
    const before = await refusals()
    expect(before).toMatchObject(expected)
    expect(before[0]!.headers.get('www-authenticate')).toBe('SluiceBackup realm="sluice-backup"')
    // Another key's signed request for its own address is no request for this one.
    const forOther = await call(`${server.url}/copies/${key.address}`, { headers: { authorization: fetchAuthorization(other, now) } })
    expect(forOther).toMatchObject({ status: 403, body: { code: 'BACKUP_BAD_SIGNATURE' } })
    await pushBackup(server.url, await seal(key, { version: 1n, payload: utf8('p') }))
    const after = await refusals()
    expect(after.map((a) => [a.status, a.body.code])).toEqual(before.map((a) => [a.status, a.body.code]))
    expect((await getCopy(server, key)).status).toBe(200)
  })

  test('limits pushes per address and requests per client with 429 and Retry-After', async () => {
    const server = await start({ pushesPerMinute: 3, requestsPerMinute: 7 })
    const [a, b] = await Promise.all([newKey(), newKey()])
    const copies = await Promise.all([1n, 2n, 3n, 4n].map((version) => seal(a, { version, payload: utf8('p') })))
    for (const c of copies.slice(0, 3)) expect((await put(server, a.address, copyJson(c))).status).toBe(200)
    const limited = await put(server, a.address, copyJson(copies[3]!))
    expect(limited).toMatchObject({ status: 429, body: { code: 'RATE_LIMITED' } })
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    await expect(pushBackup(server.url, copies[3]!)).rejects.toMatchObject({ code: 'RATE_LIMITED', status: 429, retryAfterSeconds: expect.any(Number) })
    // Another owner is not held up by a's pushes, but this client has now used up its requests.
    expect((await put(server, b.address, copyJson(await seal(b, { version: 1n, payload: utf8('p') })))).status).toBe(200)
    expect((await call(`${server.url}/status`)).status).toBe(200)
    expect(await call(`${server.url}/status`)).toMatchObject({ status: 429, body: { code: 'RATE_LIMITED' } })
    // A copy refused for the rate was not kept.
    expect((await server.store.record(a.address))?.version).toBe(3n)
  })

  test('refuses with 507 a push that would take the store past its total, and still lets a held copy be replaced', async () => {
    const server = await start({ maxTotalBytes: 3000, maxCopyBytes: 1024 })
    const [a, b] = await Promise.all([newKey(), newKey()])
    expect((await put(server, a.address, copyJson(await seal(a, { version: 1n, payload: new Uint8Array(900) })))).status).toBe(200)
    expect(await put(server, b.address, copyJson(await seal(b, { version: 1n, payload: new Uint8Array(900) })))).toMatchObject({
      status: 507,
      body: { code: 'BACKUP_SERVER_FULL' },
    })
    expect((await put(server, a.address, copyJson(await seal(a, { version: 2n, payload: new Uint8Array(900) })))).status).toBe(200)
    expect((await put(server, b.address, copyJson(await seal(b, { version: 1n, payload: new Uint8Array(10) })))).status).toBe(200)
    expect((await call(`${server.url}/status`)).body).toMatchObject({ copies: 2, bytes: expect.any(Number) })
  })

  test('any web page may call it (CORS for every origin, no credentials), and it shows its clock to pages', async () => {
    const server = await start()
    const key = await newKey()
    const preflight = await call(`${server.url}/copies/${key.address}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://some-dapp.example', 'access-control-request-method': 'PUT', 'access-control-request-headers': 'content-type' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*')
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/PUT/)
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Authorization/i)
    const status = await call(`${server.url}/status`, { headers: { origin: 'https://some-dapp.example' } })
    expect(status.headers.get('access-control-allow-origin')).toBe('*')
    expect(status.headers.get('access-control-expose-headers')).toMatch(/Date/)
    expect(status.headers.get('access-control-allow-credentials')).toBeNull()
  })

  test('what it acknowledged is there after it stops and starts again on the same directory', async () => {
    const first = await start()
    const key = await newKey()
    const envelope = await seal(key, { version: 5n, payload: utf8('kept') })
    await pushBackup(first.url, envelope)
    const { copies, bytes } = first.store
    await first.close()
    const second = await start({}, first.dataDir)
    expect([second.store.copies, second.store.bytes]).toEqual([copies, bytes])
    expect(await open(key, (await fetchBackup(second.url, key))!)).toEqual({ version: 5n, payload: utf8('kept') })
    // A second server on the same directory is refused at start.
    await expect(start({}, first.dataDir)).rejects.toMatchObject({ code: 'BACKUP_STORE' })
  })
})
