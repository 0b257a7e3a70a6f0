import { Hono } from 'hono'
import type { Hex } from 'viem'
import { describe, expect, test } from 'vitest'
import { resolveSecret, resolverRequestBody, type ResolveSecretParameters } from '../../../../src/node/runtime/secretResolver.ts'
import type { SecretResolverRequest } from '../../../../src/protocol/state/effects.ts'

const request: SecretResolverRequest = {
  token: '0x00000000000000000000000000000000000000aa',
  secrethash: `0x${'11'.repeat(32)}`,
  amount: 2n ** 70n,
  paymentIdentifier: 18446744073709551615n,
  paymentSender: '0x00000000000000000000000000000000000000bb',
  paymentRecipient: '0x00000000000000000000000000000000000000cc',
  expiration: 100n,
  revealTimeout: 10n,
  settleTimeout: 40n,
}
const secret = `0x${'ab'.repeat(32)}` as Hex

/** A resolver as a Hono app answering with `answers` in turn (the last one repeats), asked through app.request. */
function resolver(answers: (() => Response)[]) {
  const bodies: string[] = []
  const app = new Hono().post('/resolve', async (c) => {
    bodies.push(await c.req.text())
    return answers[Math.min(bodies.length - 1, answers.length - 1)]!()
  })
  return { bodies, fetch: ((input: RequestInfo | URL, init?: RequestInit) => app.request(input as string, init)) as typeof fetch }
}

function parameters(fetchFn: typeof fetch, over: Partial<ResolveSecretParameters> = {}) {
  const resolved: Hex[] = []
  const reports: unknown[] = []
  const p: ResolveSecretParameters = {
    endpoint: 'http://resolver.test/resolve',
    fetch: fetchFn,
    resolved: async (s) => void resolved.push(s),
    blockNumber: () => 50n,
    backoff: { initialMs: 1, maxMs: 4 },
    stopped: new AbortController().signal,
    report: (e) => void reports.push(e),
    ...over,
  }
  return { p, resolved, reports }
}

describe('the secret resolver', () => {
  test('writes every number as a JSON integer, digit for digit', () => {
    const body = resolverRequestBody(request)
    expect(body).toContain('"amount":1180591620717411303424')
    expect(body).toContain('"payment_identifier":18446744073709551615')
    expect(JSON.parse(body)).toMatchObject({ token: request.token, secrethash: request.secrethash, expiration: 100, reveal_timeout: 10, settle_timeout: 40 })
  })

  test('a 200 with a secret hands it to the core, lowercased', async () => {
    const r = resolver([() => Response.json({ secret: secret.toUpperCase().replace('0X', '0x') })])
    const { p, resolved, reports } = parameters(r.fetch)
    await resolveSecret(request, p)
    expect(resolved).toEqual([secret])
    expect(reports).toEqual([])
    expect(r.bodies).toHaveLength(1)
  })

  test('503 and unreachable are asked again with the backoff; the first real answer ends it', async () => {
    let calls = 0
    const r = resolver([() => new Response('busy', { status: 503 }), () => Response.json({ secret })])
    const flaky = ((input: RequestInfo | URL, init?: RequestInit) =>
      ++calls === 1 ? Promise.reject(new TypeError('fetch failed')) : r.fetch(input, init)) as typeof fetch
    const { p, resolved, reports } = parameters(flaky)
    await resolveSecret(request, p)
    expect(resolved).toEqual([secret])
    expect(calls).toBe(3)
    expect(reports).toHaveLength(2)
  })

  test('any other answer ends it without a secret (the payment fails when its lock expires)', async () => {
    for (const answer of [() => new Response('no', { status: 404 }), () => Response.json({ secret: '0x1234' }), () => Response.json({})]) {
      const r = resolver([answer])
      const { p, resolved, reports } = parameters(r.fetch)
      await resolveSecret(request, p)
      expect(resolved).toEqual([])
      expect(reports).toHaveLength(1)
      expect(r.bodies).toHaveLength(1)
    }
  })

  test('stops asking once the lock has expired, or the node stops', async () => {
    const r = resolver([() => new Response('busy', { status: 503 })])
    let block = 98n
    const expiring = parameters(r.fetch, { blockNumber: () => block++ })
    await resolveSecret(request, expiring.p)
    expect(r.bodies.length).toBe(3)

    const stop = new AbortController()
    const stopping = resolver([
      () => {
        stop.abort()
        return new Response('busy', { status: 503 })
      },
    ])
    const stopped = parameters(stopping.fetch, { stopped: stop.signal, backoff: { initialMs: 60_000, maxMs: 60_000 } })
    await resolveSecret(request, stopped.p)
    expect(stopping.bodies).toHaveLength(1)
    expect(stopped.resolved).toEqual([])
  })
})
