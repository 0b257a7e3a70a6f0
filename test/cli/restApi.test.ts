import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startDevnetCommand, type DevnetJson } from './devnetProcess.ts'
import type { SluiceProcess } from './sluiceProcess.ts'

/**
 * Every endpoint of the REST API (docs/rest-api.md; and what Sluice adds: /events, /openapi.json, /_state/export, /tokens/{token}/network), called
 * against `sluice devnet` over HTTP with the request the spec documents for it, in an order that keeps each
 * request meaningful (a channel exists before it is patched, the node shuts down last). The answer must be one
 * the spec gives that request: its success status (or the 409 of a withdrawal planned too recently). Requests
 * go out with curl, as the spec's examples do.
 */
type Ctx = { A: Address; B: Address; TTT: Address; TT2: Address; SVT: Address; rpcUrl: string }
type Case = {
  /** `METHOD /path/{param}` as the API description writes it; params are filled from `params`. */
  endpoint: string
  params?: (c: Ctx) => Record<string, string>
  query?: string
  body?: (c: Ctx) => unknown
  /** Mine blocks while the request waits (DELETE /connections settles, which takes settle_timeout blocks). */
  mine?: boolean
  /** The status the spec gives this request here (200 unless said). */
  status?: number
}

const tokenAndPartner = (c: Ctx) => ({ token_address: c.TTT, partner_address: c.B })
const hundredTokens = 100n * 10n ** 18n

const cases: Case[] = [
  { endpoint: 'GET /address' },
  { endpoint: 'GET /version' },
  { endpoint: 'GET /status' },
  { endpoint: 'GET /settings' },
  { endpoint: 'GET /contracts' },
  { endpoint: 'GET /notifications' },
  { endpoint: 'GET /monitoring' },
  { endpoint: 'GET /tokens' },
  { endpoint: 'GET /tokens/{token_address}', params: (c) => ({ token_address: c.TTT }) },
  { endpoint: 'GET /tokens/{token_address}/partners', params: (c) => ({ token_address: c.TTT }) },
  { endpoint: 'GET /tokens/{token_address}/network', params: (c) => ({ token_address: c.TTT }) },
  { endpoint: 'PUT /tokens/{token_address}', params: (c) => ({ token_address: c.SVT }), status: 201 },
  { endpoint: 'GET /channels' },
  { endpoint: 'GET /channels/{token_address}', params: (c) => ({ token_address: c.TTT }) },
  { endpoint: 'GET /channels/{token_address}/{partner_address}', params: tokenAndPartner },
  {
    endpoint: 'PUT /channels',
    body: (c) => ({ partner_address: c.B, token_address: c.TT2, total_deposit: '1000', settle_timeout: '40', reveal_timeout: '10' }),
    status: 201,
  },
  { endpoint: 'PATCH /channels/{token_address}/{partner_address}', params: tokenAndPartner, body: () => ({ total_deposit: String(hundredTokens + 100n) }) },
  { endpoint: 'PATCH /channels/{token_address}/{partner_address}', params: tokenAndPartner, body: () => ({ reveal_timeout: '12' }) },
  { endpoint: 'PATCH /channels/{token_address}/{partner_address}', params: tokenAndPartner, body: () => ({ total_withdraw: '50' }) },
  {
    endpoint: 'POST /payments/{token_address}/{target_address}',
    params: (c) => ({ token_address: c.TTT, target_address: c.B }),
    body: () => ({ amount: '5', identifier: '42' }),
  },
  { endpoint: 'GET /payments', query: 'limit=10&offset=0' },
  { endpoint: 'GET /payments/{token_address}', params: (c) => ({ token_address: c.TTT }), query: 'limit=10&offset=0' },
  { endpoint: 'GET /payments/{token_address}/{partner_address}', params: tokenAndPartner, query: 'limit=10&offset=0' },
  { endpoint: 'GET /pending_transfers' },
  { endpoint: 'GET /pending_transfers/{token_address}', params: (c) => ({ token_address: c.TTT }) },
  { endpoint: 'GET /pending_transfers/{token_address}/{partner_address}', params: tokenAndPartner },
  { endpoint: 'POST /_testing/tokens/{token_address}/mint', params: (c) => ({ token_address: c.SVT }), body: (c) => ({ to: c.A, value: '1000' }) },
  { endpoint: 'POST /user_deposit', body: () => ({ total_deposit: String(hundredTokens + 500n) }) },
  { endpoint: 'POST /user_deposit', body: () => ({ planned_withdraw_amount: '100' }) },
  // Too early (100 blocks after planning): 409, which the spec gives for this request.
  { endpoint: 'POST /user_deposit', body: () => ({ withdraw_amount: '100' }), status: 409 },
  { endpoint: 'GET /_debug/blockchain_events/network', query: 'from_block=0&to_block=100000' },
  { endpoint: 'GET /_debug/blockchain_events/tokens/{token_address}', params: (c) => ({ token_address: c.TTT }) },
  { endpoint: 'GET /_debug/blockchain_events/payment_networks/{token_address}/channels', params: (c) => ({ token_address: c.TTT }) },
  { endpoint: 'GET /_debug/blockchain_events/payment_networks/{token_address}/channels/{partner_address}', params: tokenAndPartner },
  { endpoint: 'GET /_debug/node_events', query: 'limit=10&offset=0' },
  { endpoint: 'GET /_debug/transport' },
  { endpoint: 'GET /connections' },
  {
    endpoint: 'PUT /connections/{token_address}',
    params: (c) => ({ token_address: c.TT2 }),
    body: () => ({ funds: '1000', initial_channel_target: '1', joinable_funds_target: 0.4 }),
    status: 204,
  },
  { endpoint: 'DELETE /connections/{token_address}', params: (c) => ({ token_address: c.TT2 }), mine: true },
  { endpoint: 'PATCH /channels/{token_address}/{partner_address}', params: tokenAndPartner, body: () => ({ state: 'closed' }) },
  { endpoint: 'GET /events' },
  { endpoint: 'GET /openapi.json' },
  { endpoint: 'GET /_state/export' },
  { endpoint: 'POST /shutdown' },
]

let sluice: SluiceProcess
let info: DevnetJson
let ctx: Ctx
beforeAll(async () => {
  ;({ sluice, info } = await startDevnetCommand(['--nodes', '2', '--channels', '--port-base', '0']))
  const deployment = JSON.parse(readFileSync(info.deployment, 'utf8')) as { serviceToken: Address }
  ctx = {
    A: info.nodes[0]!.address,
    B: info.nodes[1]!.address,
    TTT: info.tokens.TTT!,
    TT2: info.tokens.TT2!,
    SVT: deployment.serviceToken,
    rpcUrl: info.rpcUrl,
  }
}, 180_000)
afterAll(async () => {
  if (!sluice) return
  sluice.child.kill('SIGTERM')
  await sluice.exited
})

/** Runs curl (the spec's examples are curl commands) and returns the status and the body. */
function curl(method: string, url: string, body?: string): Promise<{ status: number; text: string }> {
  const args = ['-s', '-S', '--max-time', '90', '-X', method, '-w', '\\n%{http_code}', url]
  if (body !== undefined) args.push('-H', 'Content-Type: application/json', '-d', body)
  return new Promise((resolve, reject) =>
    execFile('curl', args, { maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error) return reject(error)
      const cut = stdout.lastIndexOf('\n')
      resolve({ status: Number(stdout.slice(cut + 1)), text: stdout.slice(0, cut) })
    }),
  )
}

const template = (endpoint: string) => endpoint.replace(/\{[^}]+\}/g, '{}')

async function mineWhile<T>(rpcUrl: string, work: Promise<T>): Promise<T> {
  let done = false
  void work.finally(() => (done = true)).catch(() => {})
  const mining = (async () => {
    for (let i = 0; i < 400 && !done; i++) {
      await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'anvil_mine', params: ['0x5'] }),
      })
      await new Promise((r) => setTimeout(r, 100))
    }
  })()
  const result = await work
  await mining
  return result
}

describe('every endpoint of the REST API against sluice devnet', () => {
  test('the list covers every route the node documents in /openapi.json', async () => {
    const doc = (await (await fetch(`${info.nodes[0]!.api}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> }
    const listed = new Set(cases.map((c) => template(c.endpoint)))
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((k) => k !== 'parameters')
        .map((m) => `${m.toUpperCase()} ${template(path)}`),
    )
    expect(documented.filter((e) => !listed.has(e))).toEqual([])
  })

  test.each(
    cases.map(
      (c, i) =>
        [
          `${i + 1}. ${c.endpoint}${c.body ? ` ${JSON.stringify(c.body({ A: '0xA', B: '0xB', TTT: '0xTTT', TT2: '0xTT2', SVT: '0xSVT', rpcUrl: '' } as never))}` : ''}`,
          c,
        ] as const,
    ),
  )(
    '%s',
    async (_, c) => {
      const [method, pattern] = c.endpoint.split(' ') as [string, string]
      const params = c.params?.(ctx) ?? {}
      const path = pattern.replace(/\{([^}]+)\}/g, (_, name: string) => params[name]!)
      const url = `${info.nodes[0]!.api}${path}${c.query ? `?${c.query}` : ''}`
      const body = c.body ? JSON.stringify(c.body(ctx)) : undefined
      if (method === 'GET' && path === '/events') {
        // The event stream stays open: its head is the answer.
        const abort = new AbortController()
        const response = await fetch(url, { signal: abort.signal })
        abort.abort()
        expect(response.status).toBe(200)
        expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
        return
      }
      // As a user would type it: curl, with the JSON body of the spec's request.
      const request = curl(method, url, body)
      const { status, text } = await (c.mine ? mineWhile(ctx.rpcUrl, request) : request)
      expect(status, `${c.endpoint} answered ${status}: ${text.slice(0, 300)}`).toBe(c.status ?? 200)
      if (status === 204) expect(text).toBe('')
      else expect(() => JSON.parse(text), text.slice(0, 300)).not.toThrow()
    },
    120_000,
  )
})
