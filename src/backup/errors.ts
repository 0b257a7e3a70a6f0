import { SluiceError } from '../errors.ts'

/**
 * The errors of a backup copy (docs/decisions/0032-off-browser-backup.md), each with a stable code: what sealing,
 * opening and checking a copy refuse, and what the client functions report about the backup server.
 */

/** Not a copy of this format: a field missing, of the wrong type or length, an unknown format or field. */
export class BackupMalformedError extends SluiceError {
  override name = 'BackupMalformedError' as const
  override readonly code = 'BACKUP_MALFORMED' as const
}

/** A copy without its owner's signature. */
export class BackupUnsignedError extends SluiceError {
  override name = 'BackupUnsignedError' as const
  override readonly code = 'BACKUP_UNSIGNED' as const
}

/**
 * The signature is not the owner's over this copy: forged, made by another key, or any part (address, version,
 * ciphertext, signature) changed after signing.
 */
export class BackupBadSignatureError extends SluiceError {
  override name = 'BackupBadSignatureError' as const
  override readonly code = 'BACKUP_BAD_SIGNATURE' as const
}

/** The owner signed it, but it does not decrypt under the owner's key with its address and version: not ours to trust. */
export class BackupTamperedError extends SluiceError {
  override name = 'BackupTamperedError' as const
  override readonly code = 'BACKUP_TAMPERED' as const
}

/** A copy of another address than the key's: it cannot be opened with this key. */
export class BackupOtherOwnerError extends SluiceError {
  override name = 'BackupOtherOwnerError' as const
  override readonly code = 'BACKUP_OTHER_OWNER' as const
}

/** The backup server did not answer within the time given. */
export class BackupTimeoutError extends SluiceError {
  override name = 'BackupTimeoutError' as const
  override readonly code = 'BACKUP_TIMEOUT' as const
}

/** No answer at all: the server is down, the name does not resolve, the connection was refused or cut, CORS refused it. */
export class BackupUnreachableError extends SluiceError {
  override name = 'BackupUnreachableError' as const
  override readonly code = 'BACKUP_UNREACHABLE' as const
}

/** An answer that is not the backup protocol's: not JSON, too large, the copy of another address, a proxy's page. */
export class BackupBadAnswerError extends SluiceError {
  override name = 'BackupBadAnswerError' as const
  override readonly code = 'BACKUP_BAD_ANSWER' as const
}

/**
 * The server refused the request and said why: its status and its own code (`BACKUP_STALE`, `BACKUP_CONFLICT`,
 * `BACKUP_TOO_LARGE`, `RATE_LIMITED`, ...), kept as this error's code so a caller decides by it.
 */
export class BackupRefusedError extends SluiceError {
  override name = 'BackupRefusedError' as const
  override readonly code: string
  /** Seconds the server asked to wait before trying again (a 429's or 503's Retry-After). */
  readonly retryAfterSeconds?: number
  /** The server's clock (its Date header, in milliseconds since 1970): how a request signed at the wrong time is signed again. */
  readonly serverDate?: number
  constructor(
    readonly status: number,
    code: string,
    message: string,
    { retryAfterSeconds, serverDate }: { retryAfterSeconds?: number | undefined; serverDate?: number | undefined } = {},
  ) {
    super(`the backup server refused: ${message} (HTTP ${status})`)
    this.code = code
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds
    if (serverDate !== undefined) this.serverDate = serverDate
  }
}
