import type { ContentfulStatusCode } from 'hono/utils/http-status'

/** An answer other than success: its status and the message the client gets as `{"errors": message}`. */
export class ApiError extends Error {
  override name = 'ApiError' as const
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

/**
 * The status for a typed error of the layers below, by its `name` (so this module imports none of them).
 * Anything else is a bug: the caller answers 500 and stops the API.
 */
const statusByName: Record<string, ContentfulStatusCode> = {
  // chain
  InsufficientFundsForGasError: 402,
  InsufficientTokenBalanceError: 402,
  TransactionRevertedError: 409,
  TokenNotMintableError: 400,
  ChainRpcError: 503,
  // node
  ConflictError: 409,
  InsufficientBalanceError: 402,
  NotFoundError: 404,
  LimitReachedError: 403,
  DisabledInProductionError: 501,
  ChannelNotFoundError: 409,
  NoRouteError: 409,
  InvalidPaymentError: 409,
  PaymentFailedError: 409,
  NodeStoppedError: 503,
  // storage
  StorageClosedError: 503,
  DumpRejectedError: 409,
}

export function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error
  if (!(error instanceof Error)) return undefined
  const status = statusByName[error.name]
  if (status === undefined) return undefined
  const message = (error as { shortMessage?: string }).shortMessage ?? error.message
  return new ApiError(status, message)
}
