import * as Comlink from 'comlink'
import { errorFromData, toErrorData, type ErrorData } from '../src/errors.ts'

const comlinkThrow = Comlink.transferHandlers.get('throw')!

/**
 * Errors thrown across Comlink keep their code, message and details (docs/decisions/0011-error-codes.md): Comlink's own
 * handler sends only name, message and stack, and a code the page branches on would be lost. Call it in both
 * contexts (the page and the node's worker) before the first call.
 */
export function carryErrorCodes(): void {
  Comlink.transferHandlers.set('throw', {
    canHandle: comlinkThrow.canHandle,
    serialize: (thrown) => [{ error: toErrorData((thrown as { value: unknown }).value) }, []],
    deserialize: (data) => {
      throw errorFromData((data as { error: ErrorData }).error)
    },
  })
}
