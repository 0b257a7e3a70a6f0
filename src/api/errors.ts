import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { SluiceError } from '../errors.ts'

const codeOfStatus: Partial<Record<number, string>> = {
  400: 'INVALID_REQUEST',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
}

/**
 * An answer other than success: its status, and the body `{"errors": message, "code": code}` (docs/rest-api.md, Errors, names
 * only `errors`; the code is ours, so a client can tell errors apart without reading prose).
 */
export class ApiError extends SluiceError {
  override name = 'ApiError' as const
  override readonly code: string
  readonly headers: Record<string, string>
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    options: { headers?: Record<string, string>; code?: string } = {},
  ) {
    super(message)
    this.headers = options.headers ?? {}
    this.code = options.code ?? codeOfStatus[status] ?? `HTTP_${status}`
  }
}

/** The answer of an ApiError: its status and headers, and the body `{"errors": message, "code": code}`. */
export function errorAnswer(error: ApiError): Response {
  return new Response(JSON.stringify({ errors: error.shortMessage, code: error.code }), {
    status: error.status,
    headers: { 'content-type': 'application/json', ...error.headers },
  })
}

/**
 * The one table from the code of an error of the layers below to the status the API answers with. Anything not
 * here is a bug: the API answers 500 and stops (src/api/app.ts). test/unit/api/errors.test.ts fails when an error
 * class of src/ has a code that is neither here nor in `codesNeverAnswered`.
 */
export const statusOfCode = {
  // chain
  INSUFFICIENT_FUNDS_FOR_GAS: 402,
  INSUFFICIENT_TOKEN_BALANCE: 402,
  TRANSACTION_REVERTED: 409,
  TOKEN_NOT_MINTABLE: 400,
  CHAIN_RPC: 503,
  CHAIN_ID_MISMATCH: 503,
  // node
  CONFLICT: 409,
  INSUFFICIENT_BALANCE: 402,
  NOT_FOUND: 404,
  LIMIT_REACHED: 403,
  DISABLED_IN_PRODUCTION: 501,
  CHANNEL_NOT_FOUND: 409,
  CHANNEL_NOT_SYNCED: 409,
  NO_ROUTE: 409,
  INVALID_PAYMENT: 409,
  PAYMENT_FAILED: 409,
  NODE_STOPPED: 503,
  STALE_STATE: 503,
  // storage
  STORAGE_CLOSED: 503,
  DUMP_REJECTED: 409,
} as const satisfies Record<string, ContentfulStatusCode>

/**
 * Codes of errors that never reach a request: the command line's, the devnet's, start-up failures of the store,
 * the transport's (delivery retries them), the protocol's (a peer's bad message is dropped, never answered) and the
 * backup copies' and the monitoring service's (the node's API never answers them).
 * If one does reach a request it is a bug, answered with 500.
 */
export const codesNeverAnswered = [
  'SLUICE',
  'NODE',
  'DEPLOYMENT_MISMATCH',
  'INVALID_DEPLOYMENT',
  'CHAIN',
  'MISSING_EVENT',
  'STORAGE',
  'STORAGE_LOCKED',
  'STORAGE_VERSION',
  'PROTOCOL',
  'INVALID_MESSAGE',
  'INVALID_SIGNATURE',
  'TRANSPORT',
  'TRANSPORT_CLOSED',
  'INVALID_PEER_KEY',
  'PEER_UNKNOWN',
  'PEER_UNREACHABLE',
  'INVALID_RELAY_ADDRESS',
  'MISSING_RUNTIME_FEATURE',
  'KEYSTORE',
  'INVALID_KEYSTORE',
  'WRONG_PASSWORD',
  'JSON_SYNTAX',
  // A log level that does not parse: refused with the host's options, before a node starts.
  'INVALID_LOG_LEVEL',
  // The backup copies' and their server's (src/backup/): the backup server maps its own (src/backup/server/app.ts).
  'BACKUP_MALFORMED',
  'BACKUP_UNSIGNED',
  'BACKUP_BAD_SIGNATURE',
  'BACKUP_TAMPERED',
  'BACKUP_OTHER_OWNER',
  'BACKUP_TIMEOUT',
  'BACKUP_UNREACHABLE',
  'BACKUP_BAD_ANSWER',
  'BACKUP_STORE',
  // The monitoring service's (src/monitor/): start-up and its own failure, never a request's answer.
  'REGISTRATION_FAILED',
  'MONITOR_FAILED',
  // The node's backup (src/node/services/backup/): a copy that cannot be restored stops the start, one too large is reported.
  'BACKUP_PAYLOAD_INVALID',
  'BACKUP_TOO_LARGE',
] as const

export type AnsweredCode = keyof typeof statusOfCode

export function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error
  if (!(error instanceof SluiceError)) return undefined
  const status = (statusOfCode as Record<string, ContentfulStatusCode>)[error.code]
  return status === undefined ? undefined : new ApiError(status, error.shortMessage, { code: error.code })
}
