import { execFile } from 'node:child_process'
import type { Hex } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseHostRule, parseOriginPattern, type HostRule, type OriginPattern } from '../../src/api/hostsAndOrigins.ts'
import { serveNode, type ServeAccess, type ServedNode } from '../../src/cli/servedNode.ts'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createNode } from '../../src/node/createNode.ts'
import { openChannelOnChain } from '../../src/node/actions/channels.ts'
import { eventually } from '../integration/support/eventually.ts'
import { devnetNodeConfig, startDevnet, type Devnet } from '../integration/support/devnet.ts'
import { checkOpenApi31 } from './support/openapiCheck.ts'
import { rawRequest, type RawReply } from './support/rawHttp.ts'

// Who may call `sluice serve` (docs/decisions/0025): the same serveNode the command runs, over real HTTP, with the
// headers a browser sends for another site's page, a DNS rebinding page, a form or a typed URL.

const [keyA, keyB, keyC] = [anvilKeys[1], anvilKeys[2], anvilKeys[3]] as [Hex, Hex, Hex]
const token = 'test-token-0123456789abcdef'
const hosts = (...names: string[]) => names.map((n) => parseHostRule(n) as HostRule)
const origins = (...patterns: string[]) => patterns.map((p) => parseOriginPattern(p) as OriginPattern)

let net: Devnet
/** The defaults: loopback, no other host, no origin, no token. */
let open: ServedNode
/** --api-host node.lan,proxy.lan:8080 --rpccorsdomain https://app.example,http://localhost:*\/* */
let cors: ServedNode
/** --api-token-file (and, with it, --api-host * and an origin). */
let locked: ServedNode
const stopped: string[] = []

async function serve(key: Hex, access: ServeAccess): Promise<ServedNode> {
  const node = await createNode(devnetNodeConfig(net, key))
  const served = await serveNode({ node, version: '0.1.0', host: '127.0.0.1', port: 0, environment: 'development', access })
  void served.stopRequested.then((why) => stopped.push(`${served.node.address}: ${why.reason}`))
  void served.run()
  return served
}

beforeAll(async () => {
  net = await startDevnet([keyA, keyB, keyC])
  open = await serve(keyA, {})
  cors = await serve(keyB, { hosts: hosts('node.lan', 'proxy.lan:8080'), corsOrigins: origins('https://app.example', 'http://localhost:*/*') })
  locked = await serve(keyC, { token, hosts: hosts('*'), corsOrigins: origins('https://app.example') })
  for (const s of [open, cors, locked]) await eventually(() => expect(s.node.status.status).toBe('ready'), 30_000)
  await openChannelOnChain(open.node.client, { tokenNetwork: net.tokenNetwork, partner: cors.node.address, totalDeposit: 1000n })
  const head = await open.node.client.chain.publicClient.getBlockNumber()
  await Promise.all([open, cors].map((s) => s.node.client.waitForBlock(head)))
}, 120_000)

afterAll(async () => {
  for (const s of [open, cors, locked]) await s?.stop(100)
  await net?.stop()
})

const port = (s: ServedNode) => s.server.port
const url = (s: ServedNode, path: string) => `${s.apiUrl}${path}`
/** A request to `s` with these headers; the Host is 127.0.0.1:<port> unless given. */
const call = (s: ServedNode, path: string, init: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {}) =>
  rawRequest(url(s, path), { ...init, headers: { host: `127.0.0.1:${port(s)}`, ...init.headers } })
const bearer = { authorization: `Bearer ${token}` }

function expectRefused(r: RawReply, status: number, code: string) {
  expect(r.status, r.text).toBe(status)
  expect(r.headers['content-type']).toMatch(/^application\/json/)
  expect(r.body).toEqual({ errors: expect.any(String), code })
}

describe('Host: only names the node answers to (DNS rebinding)', () => {
  it('answers 127.0.0.1, localhost and [::1] with its port, in any case; the port is the one the OS gave for :0', async () => {
    expect(port(open)).toBeGreaterThan(0)
    for (const host of ['127.0.0.1', 'localhost', 'LocalHost', '[::1]']) {
      const r = await call(open, '/address', { headers: { host: `${host}:${port(open)}` } })
      expect(r.status, host).toBe(200)
      expect(r.body).toEqual({ our_address: open.node.address })
    }
    for (const host of ['127.0.0.1:0', `127.0.0.1:${port(open) + 1}`, 'localhost', '127.0.0.1']) {
      expectRefused(await call(open, '/address', { headers: { host } }), 403, 'FORBIDDEN_HOST')
    }
  })

  it("refuses a rebinding page's Host with 403 and no data: not the address, not the state export, not a shutdown", async () => {
    const rebinding = { host: `attacker.example:${port(open)}` }
    const address = await call(open, '/address', { headers: rebinding })
    expectRefused(address, 403, 'FORBIDDEN_HOST')
    expect(address.body.errors).toMatch(/--api-host attacker\.example/)
    expect(address.text.toLowerCase()).not.toContain(open.node.address.slice(2).toLowerCase())
    const exported = await call(open, '/_state/export', { headers: rebinding })
    expectRefused(exported, 403, 'FORBIDDEN_HOST')
    expect(exported.text.length).toBeLessThan(300)
    expect(exported.text.toLowerCase()).not.toContain(open.node.address.slice(2).toLowerCase())
    // The export itself is there for the right Host: the refusal is the Host's doing.
    const real = await call(open, '/_state/export')
    expect(real.status).toBe(200)
    expect(real.text.toLowerCase()).toContain(open.node.address.slice(2).toLowerCase())

    expectRefused(await call(open, '/address', { headers: { host: `127.0.0.1.attacker.example:${port(open)}` } }), 403, 'FORBIDDEN_HOST')
    // A Host no URL can be made of does not reach the API at all.
    for (const host of [`user@127.0.0.1:${port(open)}`, `127.0.0.1:${port(open)}@attacker.example`]) {
      const r = await call(open, '/address', { headers: { host } })
      expectRefused(r, 400, 'INVALID_REQUEST')
      expect(r.body.errors).toMatch(/host/i)
    }
    const shutdown = await call(open, '/shutdown', { method: 'POST', headers: { ...rebinding, 'content-type': 'application/json' } })
    expectRefused(shutdown, 403, 'FORBIDDEN_HOST')
    expect((await call(open, '/status')).body).toEqual({ status: 'ready' })
    expect(stopped).toEqual([])
  })

  it('--api-host adds names, with the API port or the one given', async () => {
    expect((await call(cors, '/address', { headers: { host: `node.lan:${port(cors)}` } })).status).toBe(200)
    expect((await call(cors, '/address', { headers: { host: 'proxy.lan:8080' } })).status).toBe(200)
    expectRefused(await call(cors, '/address', { headers: { host: 'node.lan:8080' } }), 403, 'FORBIDDEN_HOST')
    expectRefused(await call(cors, '/address', { headers: { host: `proxy.lan:${port(cors)}` } }), 403, 'FORBIDDEN_HOST')
    // Names another node was given are not this one's.
    expectRefused(await call(open, '/address', { headers: { host: `node.lan:${port(open)}` } }), 403, 'FORBIDDEN_HOST')
  })

  it('--api-host * answers any Host (with the token it needs)', async () => {
    for (const host of ['anything.example:1234', `attacker.example:${port(locked)}`, '10.0.0.1']) {
      expect((await call(locked, '/address', { headers: { host, ...bearer } })).status, host).toBe(200)
    }
  })
})

describe('Origin and CORS: pages of other origins are refused unless --rpccorsdomain allows them', () => {
  it('refuses another origin, and null, with 403 and no CORS header', async () => {
    for (const origin of ['http://attacker.example', `http://localhost:${port(open)}`, `https://127.0.0.1:${port(open)}`, 'null']) {
      const r = await call(open, '/address', { headers: { origin } })
      expectRefused(r, 403, 'FORBIDDEN_ORIGIN')
      expect(r.headers['access-control-allow-origin'], origin).toBeUndefined()
    }
    const r = await call(open, '/address', { headers: { origin: 'http://attacker.example' } })
    expect(r.body.errors).toMatch(/--rpccorsdomain http:\/\/attacker\.example/)
  })

  it('answers its own origin (http://<Host>), as a page of the API itself would call it', async () => {
    const own = await call(open, '/address', { headers: { origin: `http://127.0.0.1:${port(open)}`, 'sec-fetch-site': 'same-origin' } })
    expect(own.status).toBe(200)
    const viaLocalhost = await call(open, '/address', { headers: { host: `localhost:${port(open)}`, origin: `http://localhost:${port(open)}` } })
    expect(viaLocalhost.status).toBe(200)
  })

  it('gives an allowed origin CORS headers on answers and errors, and answers its preflight', async () => {
    const r = await call(cors, '/address', { headers: { origin: 'https://app.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'cors' } })
    expect(r.status).toBe(200)
    expect(r.headers['access-control-allow-origin']).toBe('https://app.example')
    expect(r.headers.vary).toMatch(/Origin/i)
    // The page can read why a call failed.
    const missing = await call(cors, '/nothing', { headers: { origin: 'https://app.example' } })
    expect(missing.status).toBe(404)
    expect(missing.headers['access-control-allow-origin']).toBe('https://app.example')

    const preflight = await call(cors, `/payments/${net.token}/${open.node.address}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,authorization' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example')
    expect(preflight.headers['access-control-allow-methods']).toMatch(/POST/)
    expect(String(preflight.headers['access-control-allow-headers']).split(',').sort()).toEqual(['Authorization', 'Content-Type', 'Last-Event-ID'])
  })

  it("refuses a preflight of an origin it does not allow; Raiden's pattern http://localhost:*/* lets in localhost's ports only", async () => {
    const refused = await call(cors, '/address', {
      method: 'OPTIONS',
      headers: { origin: 'https://attacker.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    })
    expectRefused(refused, 403, 'FORBIDDEN_ORIGIN')
    expect(refused.headers['access-control-allow-origin']).toBeUndefined()
    expect((await call(cors, '/address', { headers: { origin: 'http://localhost:5173' } })).headers['access-control-allow-origin']).toBe(
      'http://localhost:5173',
    )
    expectRefused(await call(cors, '/address', { headers: { origin: 'http://localhost.attacker.example:5173' } }), 403, 'FORBIDDEN_ORIGIN')
    expectRefused(await call(cors, '/address', { headers: { origin: 'null' } }), 403, 'FORBIDDEN_ORIGIN')
  })

  it("refuses what another site's page starts without an Origin (Sec-Fetch-Site): a navigation, an <img>", async () => {
    const navigation = { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' }
    const exported = await call(open, '/_state/export', { headers: navigation })
    expectRefused(exported, 403, 'FORBIDDEN_ORIGIN')
    const image = { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' }
    expectRefused(await call(open, '/address', { headers: image }), 403, 'FORBIDDEN_ORIGIN')
  })

  it('answers a URL typed into the address bar (Sec-Fetch-Site: none) and requests from programs (no Sec-Fetch-*)', async () => {
    const typed = { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-user': '?1' }
    expect((await call(open, '/address', { headers: typed })).body).toEqual({ our_address: open.node.address })
    // /api/v1 itself is answered (its 404), not refused.
    expectRefused(await call(open, '', { headers: typed }), 404, 'NOT_FOUND')
    expect((await call(open, '/address')).status).toBe(200)
  })

  it("refuses another site's bodiless POST /shutdown (what the 415 check lets through): the node keeps running", async () => {
    const r = await call(open, '/shutdown', {
      method: 'POST',
      headers: { origin: 'http://attacker.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' },
    })
    expectRefused(r, 403, 'FORBIDDEN_ORIGIN')
    expect((await call(open, '/status')).body).toEqual({ status: 'ready' })
    expect(stopped).toEqual([])
  })
})

describe('--api-token-file: every request carries the token', () => {
  it('answers 401 with WWW-Authenticate: Bearer to a missing, wrong or malformed Authorization', async () => {
    const missing = await call(locked, '/address')
    expectRefused(missing, 401, 'UNAUTHORIZED')
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer/)
    const wrong = await call(locked, '/address', { headers: { authorization: `Bearer ${token}x` } })
    expectRefused(wrong, 401, 'UNAUTHORIZED')
    expect(wrong.headers['www-authenticate']).toBe('Bearer error="invalid_token"')
    for (const authorization of [`Basic ${btoa(`sluice:${token}`)}`, 'Bearer', `Bearer ${token} more`, `Bearer "${token}"`, token]) {
      const malformed = await call(locked, '/address', { headers: { authorization } })
      expectRefused(malformed, 401, 'UNAUTHORIZED')
      expect(malformed.headers['www-authenticate'], authorization).toMatch(/^Bearer/)
    }
    // Nothing happens without it: a shutdown is refused.
    expectRefused(await call(locked, '/shutdown', { method: 'POST' }), 401, 'UNAUTHORIZED')
    expect(locked.node.status.status).toBe('ready')
  })

  it('answers the right token; an allowed origin gets its preflight without one, and can read a 401', async () => {
    expect((await call(locked, '/address', { headers: bearer })).body).toEqual({ our_address: locked.node.address })
    expect((await call(locked, '/address', { headers: { authorization: `bearer ${token}` } })).status).toBe(200)
    const preflight = await call(locked, '/address', {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    })
    expect(preflight.status).toBe(204)
    const unauthorized = await call(locked, '/address', { headers: { origin: 'https://app.example' } })
    expectRefused(unauthorized, 401, 'UNAUTHORIZED')
    expect(unauthorized.headers['access-control-allow-origin']).toBe('https://app.example')
    // Origin before the token: another origin is 403 whatever it carries.
    expectRefused(await call(locked, '/address', { headers: { origin: 'https://attacker.example', ...bearer } }), 403, 'FORBIDDEN_ORIGIN')
  })

  it('openapi.json declares the bearer scheme, and requires it only where a token is required', async () => {
    const withToken = (await call(locked, '/openapi.json', { headers: bearer })).body
    expect(checkOpenApi31(withToken)).toEqual([])
    expect(withToken.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(withToken.security).toEqual([{ bearer: [] }])
    expect(withToken.paths['/address'].get.responses['401']).toBeDefined()
    const without = (await call(open, '/openapi.json')).body
    expect(checkOpenApi31(without)).toEqual([])
    expect(without.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(without.security).toBeUndefined()
    expect(without.paths['/address'].get.responses['401']).toBeUndefined()
    expect(without.paths['/shutdown'].post.responses['415']).toBeDefined()
  })
})

describe('415: a body must be application/json', () => {
  const paymentPath = () => `/payments/${net.token}/${cors.node.address}`
  const paid = async () => (await call(open, '/payments')).body as unknown[]

  it('a text/plain POST /payments (what a page sends with no preflight) pays nothing; the same as JSON pays', async () => {
    const balanceBefore = (await call(open, `/channels/${net.token}/${cors.node.address}`)).body.balance
    for (const contentType of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
      const r = await call(open, paymentPath(), { method: 'POST', headers: { 'content-type': contentType }, body: '{"amount":"1000"}' })
      expectRefused(r, 415, 'UNSUPPORTED_MEDIA_TYPE')
    }
    // A body without any Content-Type.
    expectRefused(await call(open, paymentPath(), { method: 'POST', body: new TextEncoder().encode('{"amount":"1000"}') }), 415, 'UNSUPPORTED_MEDIA_TYPE')
    expect(await paid()).toEqual([])
    expect((await call(open, `/channels/${net.token}/${cors.node.address}`)).body.balance).toBe(balanceBefore)

    const json = await call(open, paymentPath(), { method: 'POST', headers: { 'content-type': 'Application/JSON; charset=utf-8' }, body: '{"amount":"7"}' })
    expect(json.status, json.text).toBe(200)
    expect(await paid()).toHaveLength(1)
    await eventually(async () =>
      expect((await call(open, `/channels/${net.token}/${cors.node.address}`)).body.balance).toBe(String(BigInt(balanceBefore) - 7n)),
    )
  })

  it('refuses PUT, PATCH and DELETE bodies of another type too, before the route reads them', async () => {
    const channel = `/channels/${net.token}/${cors.node.address}`
    const before = (await call(open, channel)).body
    expectRefused(
      await call(open, channel, { method: 'PATCH', headers: { 'content-type': 'text/plain' }, body: '{"state":"closed"}' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
    expectRefused(
      await call(open, '/channels', {
        method: 'PUT',
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ token_address: net.token, partner_address: locked.node.address }),
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    )
    expectRefused(await call(open, `/connections/${net.token}`, { method: 'DELETE', headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE')
    expect((await call(open, channel)).body).toEqual(before)
    // Past the check, the route reads the JSON as before (a bad field is its 400, not a 415).
    const bad = await call(open, channel, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"state":"open"}' })
    expect(bad.status).toBe(400)
  })

  it('the checks run in order: Host, Origin, token, then the body type', async () => {
    const textPost = { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }
    expectRefused(
      await call(open, '/shutdown', { ...textPost, headers: { ...textPost.headers, host: 'attacker.example', origin: 'http://attacker.example' } }),
      403,
      'FORBIDDEN_HOST',
    )
    expectRefused(await call(open, '/shutdown', { ...textPost, headers: { ...textPost.headers, origin: 'http://attacker.example' } }), 403, 'FORBIDDEN_ORIGIN')
    expectRefused(await call(locked, '/shutdown', textPost), 401, 'UNAUTHORIZED')
    expectRefused(await call(locked, '/shutdown', { ...textPost, headers: { ...textPost.headers, ...bearer } }), 415, 'UNSUPPORTED_MEDIA_TYPE')
    expect(stopped).toEqual([])
  })

  it('a form POST /shutdown does not stop the node; curl -X POST .../shutdown (no body, no type) still does', async () => {
    for (const contentType of ['application/x-www-form-urlencoded', 'text/plain']) {
      expectRefused(await call(open, '/shutdown', { method: 'POST', headers: { 'content-type': contentType }, body: '' }), 415, 'UNSUPPORTED_MEDIA_TYPE')
    }
    expect((await call(open, '/status')).body).toEqual({ status: 'ready' })
    expect(stopped).toEqual([])

    const curl = await new Promise<string>((resolve, reject) =>
      execFile('curl', ['-s', '-S', '-X', 'POST', url(open, '/shutdown')], (error, stdout) => (error ? reject(error) : resolve(stdout))),
    )
    expect(JSON.parse(curl)).toEqual({ status: 'shutdown' })
    expect(await open.stopRequested).toEqual({ reason: 'shutdown' })
  })
})
