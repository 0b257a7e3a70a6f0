import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { statusOfCode, type ErrorCode } from '../../../src/api/errorCodes.ts'
import { ApiError, codesNeverAnswered, toApiError } from '../../../src/api/errors.ts'
import type { NodeApiError } from '../../../worker/browser.ts'
import { errorCode, errorFromData, toErrorData } from '../../../src/errors.ts'
import { InsufficientFundsForGasError } from '../../../src/chain/errors.ts'
import { NoRouteError, PaymentFailedError } from '../../../src/node/errors.ts'

const srcDir = new URL('../../../src/', import.meta.url).pathname

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  )
}

/** Every code an error class of src/ declares, with the file it is in. */
function declaredCodes(): { code: string; file: string }[] {
  return sourceFiles(srcDir).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/readonly code(?:: string)? = '([A-Z0-9_]+)'/g)].map((m) => ({ code: m[1]!, file: file.slice(srcDir.length) })),
  )
}

describe('error codes', () => {
  it('every error of the layers a request reaches has a status, or is listed as never answered', () => {
    // The command line's and the devnet's errors end a process; they never answer a request.
    const reachable = declaredCodes().filter((d) => !d.file.startsWith('cli/') && !d.file.startsWith('devnet/'))
    expect(reachable.length).toBeGreaterThan(30)
    const known = new Set<string>([...Object.keys(statusOfCode), ...codesNeverAnswered])
    expect(reachable.filter((d) => !known.has(d.code))).toEqual([])
  })

  it('no two error classes share a code unless they mean the same answer', () => {
    const byCode = new Map<string, string[]>()
    for (const d of declaredCodes()) byCode.set(d.code, [...(byCode.get(d.code) ?? []), d.file])
    // NOT_FOUND is both the node's and the API's own 404.
    const shared = [...byCode].filter(([code, files]) => files.length > 1 && code !== 'NOT_FOUND')
    expect(shared).toEqual([])
  })

  it('maps an error to its status by code, keeping the code and the short message', () => {
    const mapped = toApiError(new InsufficientFundsForGasError('0x0000000000000000000000000000000000000001', 1n, 2n, new Error('cause')))!
    expect(mapped.status).toBe(402)
    expect(mapped.code).toBe('INSUFFICIENT_FUNDS_FOR_GAS')
    expect(mapped.shortMessage).toMatch(/^insufficient ETH for gas/)
    expect(toApiError(new NoRouteError('no route'))).toMatchObject({ status: 409, code: 'NO_ROUTE' })
    expect(toApiError(new Error('a bug'))).toBeUndefined()
    // A class renamed or an error whose name was lost still maps: only the code counts.
    const renamed = new PaymentFailedError('refunded')
    ;(renamed as Error).name = 'Error'
    expect(toApiError(renamed)).toMatchObject({ status: 409, code: 'PAYMENT_FAILED' })
    expect(new ApiError(405, 'no')).toMatchObject({ code: 'METHOD_NOT_ALLOWED' })
  })

  it('an error keeps its code and message through structured clone as data', () => {
    const original = new PaymentFailedError('the partner refunded the lock')
    const cloned = structuredClone(toErrorData(original))
    const rebuilt = errorFromData(cloned)
    expect(rebuilt.code).toBe('PAYMENT_FAILED')
    expect(rebuilt.shortMessage).toBe('payment failed: the partner refunded the lock')
    expect(toApiError(rebuilt)).toMatchObject({ status: 409, code: 'PAYMENT_FAILED' })
    // What structured clone does to the error object itself: the code is gone, which is why data crosses.
    expect(errorCode(structuredClone(original))).toBe('INTERNAL')
    expect(errorCode(new Error('x'))).toBe('INTERNAL')
  })

  it("a dApp switches on one union of codes: the API's, the statuses' own and the page channel's (checked by tsc)", () => {
    expectTypeOf<NodeApiError['code']>().toEqualTypeOf<ErrorCode>()
    for (const code of [
      'NO_ROUTE',
      'INSUFFICIENT_BALANCE',
      'INVALID_REQUEST',
      'UNSUPPORTED_MEDIA_TYPE',
      'FORBIDDEN_ORIGIN',
      'NO_NODE',
      'NODE_LOST',
      'CANCELLED',
      'HTTP_418',
    ] as const)
      expectTypeOf(code).toExtend<ErrorCode>()
    expectTypeOf<'NO_SUCH_CODE'>().not.toExtend<ErrorCode>()
    // What the API answers by default for a status carries a code of the union.
    expect(new ApiError(404, 'x').code).toBe('NOT_FOUND')
    expect(new ApiError(402, 'x').code).toBe('HTTP_402')
  })
})
