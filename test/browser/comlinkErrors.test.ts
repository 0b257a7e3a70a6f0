// An error thrown in the node's worker reaches the page through Comlink with its code (structured clone alone drops it).
import * as Comlink from 'comlink'
import { afterAll, expect, test } from 'vitest'
import { toApiError } from '../../src/api/errors.ts'
import { SluiceError } from '../../src/errors.ts'
import { carryErrorCodes } from '../../worker/comlinkErrors.ts'
import type { ErrorWorkerApi } from './fixtures/errorWorker.ts'

carryErrorCodes()
const worker = new Worker(new URL('./fixtures/errorWorker.ts', import.meta.url), { type: 'module' })
const api = Comlink.wrap<ErrorWorkerApi>(worker)
afterAll(() => worker.terminate())

test("the node's errors keep their code and message across the worker boundary; anything else is INTERNAL", async () => {
  const noRoute = await (api.noRoute() as Promise<unknown>).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(noRoute).toBeInstanceOf(SluiceError)
  expect(noRoute).toMatchObject({ code: 'NO_ROUTE', shortMessage: 'no route to 0x00000000000000000000000000000000000000cc can carry 5' })
  // The page maps it to the same status the REST API answers with.
  expect(toApiError(noRoute)).toMatchObject({ status: 409, code: 'NO_ROUTE' })
  await expect(api.noGas()).rejects.toMatchObject({ code: 'INSUFFICIENT_FUNDS_FOR_GAS', shortMessage: expect.stringMatching(/^insufficient ETH for gas/) })
  await expect(api.bug() as Promise<unknown>).rejects.toMatchObject({ code: 'INTERNAL', shortMessage: 'something is undefined' })
})
