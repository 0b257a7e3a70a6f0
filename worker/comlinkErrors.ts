import * as Comlink from 'comlink'
import { errorFromData, toErrorData, type ErrorData, withCode } from '../src/errors.ts'
import { BrowserUnsupportedError, type BrowserFeature } from './browserSupport.ts'

const comlinkThrow = Comlink.transferHandlers.get('throw')!

/**
 * Errors thrown across Comlink keep their code, message and details (docs/decisions/0011-error-codes.md): Comlink's own
 * handler sends only name, message and stack, and a code the page branches on would be lost. A BROWSER_UNSUPPORTED
 * of the node's worker keeps its list of what is missing too. Call it in both contexts (the page and the node's
 * worker) before the first call.
 */
export function carryErrorCodes(): void {
  Comlink.transferHandlers.set('throw', {
    canHandle: comlinkThrow.canHandle,
    serialize: (thrown) => {
      const value = (thrown as { value: unknown }).value
      const unsupported = withCode<BrowserUnsupportedError>(value, 'BROWSER_UNSUPPORTED')
      return [{ error: toErrorData(value), ...(unsupported ? { missing: [...unsupported.missing] } : {}) }, []]
    },
    deserialize: (data) => {
      const { error, missing } = data as { error: ErrorData; missing?: BrowserFeature[] }
      throw missing ? new BrowserUnsupportedError(missing, error.message) : errorFromData(error)
    },
  })
}
