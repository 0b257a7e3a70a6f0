// What a failed call tells about its endpoint (src/chain/rpcFailure.ts), on the errors viem and wallets really throw:
// answers are never retried nor moved elsewhere, endpoint failures are; and for eth_getLogs, which failures a smaller
// range may fix.
import fc from 'fast-check'
import {
  ExecutionRevertedError,
  HttpRequestError,
  InternalRpcError,
  InvalidInputRpcError,
  InvalidParamsRpcError,
  LimitExceededRpcError,
  MethodNotFoundRpcError,
  RpcRequestError,
  TimeoutError,
  TransactionRejectedRpcError,
  UnknownRpcError,
} from 'viem'
import { describe, expect, test } from 'vitest'
import { classifyRpcFailure, isLogRangeRefusal, LogRangeTimeoutError, RpcUnavailableError, rpcFailureKind } from '../../../src/chain/rpcFailure.ts'

const url = 'http://rpc.example'
const body = { method: 'eth_call', params: [] }
/** As viem's http transport throws a JSON-RPC error answer: the code's class around RpcRequestError. */
const answered = (code: number, message: string, status?: number) => {
  const inner = new RpcRequestError({ body, error: { code, message }, url, ...(status ? { status, headers: new Headers() } : {}) })
  const byCode: Record<number, (e: Error) => Error> = {
    [-32603]: (e) => new InternalRpcError(e),
    [-32005]: (e) => new LimitExceededRpcError(e),
    [-32000]: (e) => new InvalidInputRpcError(e),
    [-32602]: (e) => new InvalidParamsRpcError(e),
    [-32601]: (e) => new MethodNotFoundRpcError(e),
    [-32003]: (e) => new TransactionRejectedRpcError(e),
  }
  return byCode[code]?.(inner) ?? inner
}
const unreachable = (code: string) =>
  new HttpRequestError({ url, body, cause: Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error(`connect ${code}`), { code }) }) })
const httpStatus = (status: number, headers: Record<string, string> = {}) => new HttpRequestError({ url, body, status, headers: new Headers(headers) })

describe('classifyRpcFailure', () => {
  test.each([
    ['a revert (code 3)', new RpcRequestError({ body, error: { code: 3, message: 'execution reverted', data: '0x08c379a0' } as never, url })],
    ['a revert as -32603 with its words', answered(-32603, 'execution reverted: not enough')],
    ['a revert as viem says it', new ExecutionRevertedError({ message: 'execution reverted' })],
    ['nonce too low (anvil, -32003)', answered(-32003, 'nonce too low')],
    ['nonce too low (geth, -32000)', answered(-32000, 'nonce too low: next nonce 5, tx nonce 4')],
    ['already known', answered(-32000, 'already known')],
    ['insufficient funds', answered(-32000, 'insufficient funds for gas * price + value')],
    ['invalid params', answered(-32602, 'invalid argument 0: hex string has length 2, want 40 for common.Address')],
    ['an unknown method', answered(-32601, 'the method eth_foo does not exist/is not available')],
  ])('%s is an answer', (_, error) => {
    expect(classifyRpcFailure(error).kind).toBe('answer')
  })

  test.each([
    ['a refused connection', unreachable('ECONNREFUSED'), /ECONNREFUSED/],
    ['a reset connection', unreachable('ECONNRESET'), /ECONNRESET/],
    ['no answer in time', new TimeoutError({ body, url }), /timed out/],
    ['HTTP 502 without a JSON-RPC body', httpStatus(502), /HTTP 502/],
    ['HTTP 503 with a JSON-RPC error', answered(-32000, 'no backend is currently healthy', 503), /HTTP 503/],
    ['an internal error (-32603)', answered(-32603, 'internal error'), /-32603/],
    ['limit exceeded (-32005)', answered(-32005, 'Request limit exceeded.'), /-32005/],
    ["QuickNode's -32007", answered(-32007, '10/second request limit reached'), /rate limited/],
    ["geth's own timeout", answered(-32000, 'request timed out'), /timed out/],
    ['a JSON-RPC 429 in a 200', answered(429, 'Too Many Requests'), /429/],
    [
      "MetaMask's -32603 around its RPC's 429",
      Object.assign(new Error('Internal JSON-RPC error.'), { code: -32603, data: { code: 429, message: 'Too Many Requests' } }),
      /-32603/,
    ],
    ['a provider error without a code', new UnknownRpcError(new Error('network changed')), /network changed/],
  ])('%s is transient', (_, error, reason) => {
    const failure = classifyRpcFailure(error)
    expect(failure.kind).toBe('transient')
    expect(failure.reason).toMatch(reason)
  })

  test("a 429's Retry-After, in seconds or as a date", () => {
    expect(classifyRpcFailure(httpStatus(429, { 'retry-after': '3' }))).toEqual({ kind: 'transient', reason: 'HTTP 429', retryAfterMs: 3_000 })
    const at = new Date(Date.now() + 10_000).toUTCString()
    expect(classifyRpcFailure(httpStatus(429, { 'retry-after': at })).retryAfterMs).toBeGreaterThan(8_000)
    expect(classifyRpcFailure(httpStatus(429, { 'retry-after': 'soon' })).retryAfterMs).toBeUndefined()
  })

  test('never throws, and says why in one short line, whatever was thrown', () => {
    const thrown = fc.oneof(
      fc.anything(),
      fc.record({ code: fc.oneof(fc.integer(), fc.string()), message: fc.string(), data: fc.anything() }),
      fc.string().map((m) => new Error(m)),
    )
    fc.assert(
      fc.property(thrown, (error) => {
        const failure = classifyRpcFailure(error)
        expect(['transient', 'answer']).toContain(failure.kind)
        expect(failure.reason.length).toBeLessThanOrEqual(170)
        expect(typeof isLogRangeRefusal(error)).toBe('boolean')
      }),
    )
  })
})

// The metrics' `kind` label of sluice_rpc_errors_total (docs/decisions/0078): a few values, each failure in one.
describe('rpcFailureKind', () => {
  test.each([
    ['a refused connection', unreachable('ECONNREFUSED'), 'connection'],
    ['a reset connection', unreachable('ECONNRESET'), 'connection'],
    ['no answer in time', new TimeoutError({ body, url }), 'timeout'],
    ['HTTP 502 without a JSON-RPC body', httpStatus(502), 'http_5xx'],
    ['HTTP 503 with a JSON-RPC error', answered(-32000, 'no backend is currently healthy', 503), 'http_5xx'],
    ['HTTP 401', httpStatus(401), 'http_4xx'],
    ['HTTP 429', httpStatus(429, { 'retry-after': '1' }), 'rate_limited'],
    ['a JSON-RPC 429 in a 200', answered(429, 'Too Many Requests'), 'rate_limited'],
    ["QuickNode's -32007", answered(-32007, '10/second request limit reached'), 'rate_limited'],
    ['an internal error (-32603)', answered(-32603, 'internal error'), 'rpc_error'],
    ['limit exceeded (-32005)', answered(-32005, 'Request limit exceeded.'), 'rpc_error'],
    ['every endpoint failed', new RpcUnavailableError('eth_call', ['#1: HTTP 502'], undefined), 'unavailable'],
    ['a revert', new ExecutionRevertedError({ message: 'execution reverted' }), 'answer'],
  ])('%s: %s', (_, error, kind) => {
    expect(rpcFailureKind(classifyRpcFailure(error))).toBe(kind)
  })
})

describe('isLogRangeRefusal', () => {
  test.each([
    ["Infura's too many results", answered(-32005, 'query returned more than 10000 results')],
    ['a block range too large', answered(-32602, 'block range too large, max 2000')],
    ['an internal error (some providers answer a range so)', answered(-32603, 'internal error')],
    ["a node's own query timeout", answered(-32000, 'query timeout exceeded')],
    ['a range that timed out on an endpoint that answers', new LogRangeTimeoutError('http://rpc.example', 10_000)],
    ['every endpoint failed, the last with an internal error', new RpcUnavailableError('eth_getLogs', ['#1: -32603'], answered(-32603, 'internal error'))],
  ])('%s: a smaller range may do', (_, error) => {
    expect(isLogRangeRefusal(error)).toBe(true)
  })

  test.each([
    ['a 429', httpStatus(429, { 'retry-after': '1' })],
    ['a JSON-RPC 429', answered(429, 'Too Many Requests')],
    ["Infura's rate limit as -32005", answered(-32005, 'project ID request rate exceeded')],
    ['a 503', httpStatus(503)],
    ['a 502 with a JSON-RPC body', answered(-32603, 'bad gateway', 502)],
    ['a reset', unreachable('ECONNRESET')],
    ['no answer in time', new TimeoutError({ body, url })],
    ['every endpoint failed, the last unreachable', new RpcUnavailableError('eth_getLogs', ['#1: ECONNREFUSED'], unreachable('ECONNREFUSED'))],
  ])('%s: the endpoint, not the range', (_, error) => {
    expect(isLogRangeRefusal(error)).toBe(false)
  })
})
