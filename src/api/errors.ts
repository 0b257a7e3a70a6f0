import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { SluiceError } from '../errors.ts'
import { codeOfStatus, statusOfCode, type AnsweredCode, type ApiErrorCode } from './errorCodes.ts'

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
  // startNode()'s options (@sluice/node's, as the page's): thrown to the caller before a node starts.
  'INVALID_OPTIONS',
  // The services' leadership on PostgreSQL (src/monitor/serviceDatabase.ts): the service stops, the node's API never sees it.
  'LEADERSHIP_LOST',
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
  // A node's pathfinding client's (src/node/runtime/pfsApi.ts): the node routes locally instead (docs/decisions/0073).
  'PATHFINDING_SERVICE',
  // The pathfinding service's (src/pathfinding/service/): its API answers its own in raiden-services' form; its failure stops it.
  'PFS_ANSWER',
  'PATHFINDING_FAILED',
  // The node's backup (src/node/services/backup/): a copy that cannot be restored stops the start, one too large is reported.
  'BACKUP_PAYLOAD_INVALID',
  'BACKUP_TOO_LARGE',
] as const

/** The answer of an error a request met: an ApiError as it is, a layer's error by the table; else undefined (a bug). */
export function toApiError(error: unknown): ApiError<string> | undefined {
  if (error instanceof ApiError) return error
  if (!(error instanceof SluiceError) || !Object.hasOwn(statusOfCode, error.code)) return undefined
  const code = error.code as AnsweredCode
  return new ApiError(statusOfCode[code], error.shortMessage, { code })
}
