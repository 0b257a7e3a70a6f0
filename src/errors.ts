/**
 * Base of every error Sluice throws on purpose, in every layer (docs/decisions/0011-error-codes.md).
 *
 * Each class has a stable `code` (`'NO_ROUTE'`, `'STORAGE_LOCKED'`, ...): behaviour is decided by the code, never
 * by a class name or a message, because a name is lost or renamed where a message crosses a boundary (structured
 * clone turns every error into a plain `Error`) and a message is prose. The REST API maps codes to statuses in one
 * table (src/api/errorCodes.ts); `toErrorData` / `errorFromData` carry an error across a worker or a service worker.
 * Like viem's BaseError: a `shortMessage`, optional `details`, the `cause`, and `walk` over the cause chain.
 */
export class SluiceError extends Error {
  override name: string = 'SluiceError'
  readonly code: string = 'SLUICE'
  readonly shortMessage: string
  readonly details?: string

  constructor(shortMessage: string, options: { details?: string; cause?: unknown } = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, options.cause === undefined ? undefined : { cause: options.cause })
    this.shortMessage = shortMessage
    if (options.details !== undefined) this.details = options.details
  }

  /** The first error in the cause chain (this one included) that `predicate` accepts, or null. */
  walk(predicate: (error: unknown) => boolean): unknown {
    let current: unknown = this
    for (let depth = 0; current !== undefined && current !== null && depth < 32; depth++) {
      if (predicate(current)) return current
      current = (current as { cause?: unknown }).cause
    }
    return null
  }
}

/** What crosses a boundary (postMessage, Comlink, the service worker) in place of an error object. */
export type ErrorData = { code: string; message: string; details?: string }

/** The code of anything thrown: a SluiceError's own, `INTERNAL` for anything else (a bug). */
export function errorCode(error: unknown): string {
  return error instanceof SluiceError ? error.code : (errorFromDataLike(error)?.code ?? 'INTERNAL')
}

/** True when `error` is a SluiceError with one of these codes. */
export function hasCode(error: unknown, ...codes: readonly string[]): boolean {
  return error instanceof SluiceError && codes.includes(error.code)
}

/**
 * `error` when it has the code `code`, else undefined: for a reader that needs the fields of the class of that code
 * (`withCode<FeesAboveCapError>(error, 'FEES_ABOVE_CAP')?.asked`). The class is a type here, the decision the code's
 * (docs/architecture.md, rule 6); its own fields come only with an error thrown in this realm, not with one rebuilt
 * from data on the far side of a boundary.
 */
export function withCode<E extends SluiceError>(error: unknown, code: E['code']): E | undefined {
  return hasCode(error, code) ? (error as E) : undefined
}

/** Plain data for `error`, safe to structured-clone or JSON-encode, keeping its code. */
export function toErrorData(error: unknown): ErrorData {
  if (error instanceof SluiceError) return { code: error.code, message: error.shortMessage, ...(error.details !== undefined ? { details: error.details } : {}) }
  // viem's errors have a short message too; their full one carries whole requests.
  if (error instanceof Error) return { code: 'INTERNAL', message: (error as { shortMessage?: string }).shortMessage ?? error.message.split('\n')[0] ?? '' }
  return { code: 'INTERNAL', message: String(error) }
}

/** An error rebuilt on the far side of a boundary from its data: the same code, message and details. */
export class RemoteError extends SluiceError {
  override name = 'RemoteError' as const
  override readonly code: string
  constructor(data: ErrorData) {
    super(data.message, data.details !== undefined ? { details: data.details } : {})
    this.code = data.code
  }
}

export function errorFromData(data: ErrorData): RemoteError {
  return new RemoteError(data)
}

function errorFromDataLike(value: unknown): ErrorData | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { code, message } = value as { code?: unknown; message?: unknown }
  return typeof code === 'string' && typeof message === 'string' ? { code, message } : undefined
}
