import { SluiceError } from '../../errors.ts'
import type { PfsErrorName } from '../errorCodes.ts'

/**
 * An answer of the pathfinding service's API other than success, by raiden-services' error name (errorCodes.ts: its
 * `error_code` and HTTP status), with its `error_details`.
 */
export class PfsAnswerError extends SluiceError {
  override name = 'PfsAnswerError' as const
  override readonly code = 'PFS_ANSWER' as const
  constructor(
    readonly pfsName: PfsErrorName,
    message: string,
    readonly errorDetails: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/** The service stopped on its own: its store failed (nothing more can be held or answered). */
export class PathfindingServiceFailedError extends SluiceError {
  override name = 'PathfindingServiceFailedError' as const
  override readonly code = 'PATHFINDING_FAILED' as const
}
