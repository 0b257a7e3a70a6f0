/**
 * The API's error codes, with no import: the page's declarations (sluice/browser) carry them without hono.
 */

/** The code of an answer whose error names none: by its status. */
export const codeOfStatus = {
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
  FEES_ABOVE_CAP: 503,
  NONCE_TAKEN: 409,
  TRANSACTION_QUEUE_STOPPED: 503,
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
  CONFIRMATION_TIMEOUT: 503,
  STALE_STATE: 503,
  // storage
  STORAGE_CLOSED: 503,
  // Another instance took the store over (a hub's hot standby, docs/decisions/0076): this one stops; the request failed.
  LEASE_LOST: 503,
  DUMP_REJECTED: 409,
} as const satisfies Record<string, number>

export type AnsweredCode = keyof typeof statusOfCode
