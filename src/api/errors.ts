import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { SluiceError } from '../errors.ts'

/** The code of an answer whose error names none: by its status. */
const codeOfStatus = {
  400: 'INVALID_REQUEST',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
} as const

/**
 * Every `code` the node's REST API answers with: the table of the layers' codes below, the statuses' own, the
 * request checks' (media type, credential, host, origin), and `HTTP_<status>` for a status with none of its own.
 */
export type ApiErrorCode =
  | AnsweredCode
  | (typeof codeOfStatus)[keyof typeof codeOfStatus]
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN_HOST'
  | 'FORBIDDEN_ORIGIN'
  | `HTTP_${number}`

/**
 * What the page's own channel to the node answers with where the node cannot (worker/apiChannel.ts): no node runs
 * in the origin, the node stopped while answering, the caller cancelled.
 */
export type PageErrorCode = 'NO_NODE' | 'NODE_LOST' | 'CANCELLED'

/** Every error code a dApp can meet calling a node, in the page or over HTTP: one union to switch on. */
export type ErrorCode = ApiErrorCode | PageErrorCode

/**
 * An answer other than success: its status, and the body `{"errors": message, "code": code}` (docs/rest-api.md, Errors, names
 * only `errors`; the code is ours, so a client can tell errors apart without reading prose).
 */
export class ApiError<C extends string = ApiErrorCode> extends SluiceError {
  override name = 'ApiError' as const
  override readonly code: C
  readonly headers: Record<string, string>
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    options: { headers?: Record<string, string>; code?: C } = {},
  ) {
    super(message)
    this.headers = options.headers ?? {}
    // Another service's codes (the backup server's, the monitoring service's) name theirs: this default is the node API's.
    this.code = options.code ?? (((codeOfStatus as Partial<Record<number, string>>)[status] ?? `HTTP_${status}`) as C)
  }
}

/** The answer of an ApiError: its status and headers, and the body `{"errors": message, "code": code}`. */
export function errorAnswer(error: ApiError<string>): Response {
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

/** The answer of an error a request met: an ApiError as it is, a layer's error by the table; else undefined (a bug). */
export function toApiError(error: unknown): ApiError<string> | undefined {
  if (error instanceof ApiError) return error
  if (!(error instanceof SluiceError) || !Object.hasOwn(statusOfCode, error.code)) return undefined
  const code = error.code as AnsweredCode
  return new ApiError(statusOfCode[code], error.shortMessage, { code })
}
