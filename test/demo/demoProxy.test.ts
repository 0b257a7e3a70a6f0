import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { proxyTarget, type ProxyTargets } from '../../scripts/demoProxy.ts'

/**
 * Which requests the demo's door passes on to the peers' and the monitoring service's APIs (scripts/demoProxy.ts):
 * the routes the page uses, to the API the path names, never anything else. Who may call it is the rule of decision
 * 0025 (test/unit/api/hostsAndOrigins.test.ts); the door on a running demo is test/demo/demo.test.ts.
 */

const targets: ProxyTargets = { peers: ['http://127.0.0.1:5001/api/v1', 'http://127.0.0.1:5002/api/v1'], monitor: 'http://127.0.0.1:5003/api/v1' }
const token = '0x2279B7A0a67DB372996a5FaB50D91eAA73d2eBe6'
const us = '0xAb2B3159371Bc2fb480D4Ff0Ca0B1987eeE0840f'

/** A path as `new URL` leaves it: segments of URL characters, no `.` or `..` segment. */
const segment = fc.stringMatching(/^[A-Za-z0-9_%~!$&'()*+,;=:@-][A-Za-z0-9._%~!$&'()*+,;=:@-]{0,44}$/)
const path = fc.oneof(
  fc.array(segment, { maxLength: 6 }).map((s) => `/${s.join('/')}`),
  fc.constantFrom(
    '/address',
    '/channels',
    `/channels/${token}`,
    `/channels/${token}/${us}`,
    `/channels/${token}/${us}/more`,
    `/tokens/${token}/network`,
    `/payments/${token}/${us}`,
    '/status',
    '/monitor_calls',
    '/channels/0x12/0x34',
  ),
)
const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS')
/** What the door passes on: the page's reads, a payment and a close at a peer, the service's three reads. */
const PASSED = [
  /^GET http:\/\/127\.0\.0\.1:500[12]\/api\/v1\/(address|channels(\/0x[0-9a-fA-F]{40}(\/0x[0-9a-fA-F]{40})?)?|tokens\/0x[0-9a-fA-F]{40}\/network)(\?.*)?$/,
  /^(PATCH http:\/\/127\.0\.0\.1:500[12]\/api\/v1\/channels|POST http:\/\/127\.0\.0\.1:500[12]\/api\/v1\/payments)\/0x[0-9a-fA-F]{40}\/0x[0-9a-fA-F]{40}$/,
  /^GET http:\/\/127\.0\.0\.1:5003\/api\/v1\/(status|channels|monitor_calls)(\?.*)?$/,
]

describe("the demo's door", () => {
  test('passes the routes the page uses to the API its path names', () => {
    expect(proxyTarget('GET', `/peers/1/api/v1/channels/${token}/${us}`, '', targets)).toEqual({
      url: `http://127.0.0.1:5001/api/v1/channels/${token}/${us}`,
    })
    expect(proxyTarget('PATCH', `/peers/2/api/v1/channels/${token}/${us}`, '?x=1', targets)).toEqual({
      url: `http://127.0.0.1:5002/api/v1/channels/${token}/${us}`,
    })
    expect(proxyTarget('POST', `/peers/1/api/v1/payments/${token}/${us}`, '', targets)).toEqual({ url: `http://127.0.0.1:5001/api/v1/payments/${token}/${us}` })
    expect(proxyTarget('GET', '/monitor/api/v1/monitor_calls', '?limit=1000', targets)).toEqual({
      url: 'http://127.0.0.1:5003/api/v1/monitor_calls?limit=1000',
    })
    expect(proxyTarget('GET', '/index.html', '', targets)).toBeUndefined()
    expect(proxyTarget('GET', '/api/v1/channels', '', targets)).toBeUndefined()
  })

  test("refuses every other route, method and peer, with the API's error shape", () => {
    expect(proxyTarget('GET', '/peers/1/api/v1/_state/export', '', targets)).toMatchObject({ status: 404, code: 'NOT_FOUND' })
    expect(proxyTarget('PUT', '/peers/1/api/v1/channels', '', targets)).toMatchObject({ status: 405, code: 'METHOD_NOT_ALLOWED' })
    expect(proxyTarget('POST', '/monitor/api/v1/status', '', targets)).toMatchObject({ status: 405, code: 'METHOD_NOT_ALLOWED' })
    for (const n of ['0', '3', '01', '1e0', ''])
      expect(proxyTarget('GET', `/peers/${n}/api/v1/address`, '', targets)).toMatchObject({ status: 404, code: 'NOT_FOUND' })
  })

  test('whatever the path: not the door’s, a refusal, or a route the page uses on the API the path names', () => {
    fc.assert(
      fc.property(
        method,
        fc.constantFrom('/peers/1', '/peers/2', '/peers/3', '/monitor', '/other'),
        path,
        fc.constantFrom('', '?limit=5'),
        (m, prefix, rest, search) => {
          const decision = proxyTarget(m, `${prefix}/api/v1${rest}`, search, targets)
          if (prefix === '/other') {
            expect(decision).toBeUndefined()
            return
          }
          expect(decision).toBeDefined()
          if (!decision || 'status' in decision) return
          expect(PASSED.some((r) => r.test(`${m} ${decision.url}`))).toBe(true)
          const base = prefix === '/monitor' ? targets.monitor : targets.peers[Number(prefix.slice(-1)) - 1]
          expect(decision.url).toBe(`${base}${rest}${m === 'GET' ? search : ''}`)
        },
      ),
      { numRuns: 2000 },
    )
  })
})
