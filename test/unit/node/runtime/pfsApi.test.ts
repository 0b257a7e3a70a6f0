import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { afterEach, describe, expect, test } from 'vitest'
import { feeTimestamp } from '../../../../src/node/runtime/pathfinder.ts'
import { integersAsStrings, pfsInfo, pfsPaths } from '../../../../src/node/runtime/pfsApi.ts'
import { timestampMicros } from '../../../../src/pathfinding/timestamps.ts'

// The node's calls to a pathfinding service (docs/decisions/0073): every one ends within its timeout, whatever the
// service does; amounts of any size come through whole.

const servers: Server[] = []
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((s) => {
      const closed = new Promise((resolve) => s.close(resolve))
      s.closeAllConnections()
      return closed
    }),
  )
})

/** An HTTP server on a free port that answers every request with `handle` (which may never answer). */
async function serve(handle: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handle)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const call = (timeoutMs = 2_000) => ({ fetch: globalThis.fetch, timeoutMs })

describe("a pathfinding service's answers", () => {
  test('integers keep every digit, inside strings nothing changes (property)', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        fc.bigInt({ min: -(10n ** 80n), max: 10n ** 80n }),
        fc.string(),
        fc.boolean(),
        fc.constant(null),
        fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }).filter((d) => !Number.isInteger(d)),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(fc.string(), tie('value'), { maxKeys: 4 }),
      ),
    })).value
    fc.assert(
      fc.property(json, (value) => {
        const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `@@${v}@@` : v)).replace(/"@@(-?\d+)@@"/g, '$1')
        const expected = JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)))
        expect(JSON.parse(integersAsStrings(text))).toEqual(expected)
      }),
    )
    expect(JSON.parse(integersAsStrings('{"price_info": 123456789012345678901234567890, "m": "a \\"9\\" 7", "f": 1.5e3}'))).toEqual({
      price_info: '123456789012345678901234567890',
      m: 'a "9" 7',
      f: 1500,
    })
  })

  test('GET /info read as Raiden reads it, its price whole', async () => {
    const url = await serve((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end(
        `{"price_info": 50000000000000000001, "network_info": {"chain_id": 31337, "token_network_registry_address": "0x5fbdb2315678afecb367f032d93f642f64180aa3", "user_deposit_address": "0x0000000000000000000000000000000000000001", "confirmed_block": {"number": 77}}, "payment_address": "0x0000000000000000000000000000000000000002", "operator": "op", "message": "hi", "version": "1"}`,
      )
    })
    expect(await pfsInfo(url, call())).toMatchObject({
      url,
      price: 50000000000000000001n,
      chainId: 31337n,
      tokenNetworkRegistry: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      confirmedBlock: 77n,
      operator: 'op',
    })
  })

  test('a service that never answers: a timeout error within the bound, never a hang', async () => {
    const url = await serve(() => {
      // Holds the request open, answering nothing.
    })
    const started = performance.now()
    await expect(pfsInfo(url, call(300))).rejects.toMatchObject({ code: 'PATHFINDING_SERVICE', reason: 'timeout' })
    expect(performance.now() - started).toBeLessThan(2_000)
    // One that starts its answer and never ends it, too: the bound covers the reading.
    const slow = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"result": [')
    })
    await expect(
      pfsPaths(slow, `0x${'11'.repeat(20)}`, { from: `0x${'22'.repeat(20)}`, to: `0x${'33'.repeat(20)}`, value: 1n, maxPaths: 3 }, call(300)),
    ).rejects.toMatchObject({
      reason: 'timeout',
    })
  })

  test('unreachable, not JSON, or refused with raiden-services’ error code: each told apart', async () => {
    // A port nothing listens on any more.
    const gone = await serve(() => {})
    await new Promise((resolve) => servers.pop()!.close(resolve))
    await expect(pfsInfo(gone, call())).rejects.toMatchObject({ reason: 'unreachable', message: expect.stringMatching(/ECONNREFUSED/) })
    const html = await serve((_req, res) => res.end('<html>gateway</html>'))
    await expect(pfsInfo(html, call())).rejects.toMatchObject({ reason: 'malformed' })
    const failing = await serve((_req, res) => {
      res.statusCode = 502
      res.end('{"errors": "bad gateway"}')
    })
    await expect(pfsInfo(failing, call())).rejects.toMatchObject({ reason: 'unreachable', status: 502 })
    const noRoute = await serve((_req, res) => {
      res.statusCode = 404
      res.end('{"errors": "No route between nodes found.", "error_code": 2201, "error_details": {"reason": "not_connected"}}')
    })
    const paths = pfsPaths(noRoute, `0x${'11'.repeat(20)}`, { from: `0x${'22'.repeat(20)}`, to: `0x${'33'.repeat(20)}`, value: 1n, maxPaths: 3 }, call())
    await expect(paths).rejects.toMatchObject({ reason: 'refused', status: 404, errorCode: 2201, errorDetails: { reason: 'not_connected' } })
  })

  test("a route's address_metadata comes through as the service sent it, unread (the node checks each record), whatever it is", async () => {
    const [a, b] = [`0x${'22'.repeat(20)}`, `0x${'33'.repeat(20)}`]
    const metadata = { [b]: { user_id: '16Uiu2', displayname: 'ab', capabilities: '{"ts": 12345678901234567890}' } }
    const answered = await serve((_req, res) =>
      res.end(
        JSON.stringify({
          result: [
            { path: [a, b], estimated_fee: 0, address_metadata: metadata },
            { path: [a, b], estimated_fee: 0, address_metadata: 'garbage' },
            { path: [a, b], estimated_fee: 0 },
          ],
          feedback_token: 't',
        }),
      ),
    )
    const { routes } = await pfsPaths(answered, `0x${'11'.repeat(20)}`, { from: a as `0x${string}`, to: b as `0x${string}`, value: 1n, maxPaths: 3 }, call())
    expect(routes.map((r) => r.addressMetadata)).toEqual([metadata, 'garbage', undefined])
  })

  test("a fee update's timestamp is Python's naive UTC with microseconds, as the service reads it", () => {
    const micros = Date.UTC(2026, 10, 29, 14, 3, 7, 123) * 1000 + 456
    expect(feeTimestamp(micros)).toBe('2026-11-29T14:03:07.123456')
    expect(timestampMicros(feeTimestamp(micros))).toBe(micros)
  })
})
