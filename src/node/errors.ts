import { SluiceError } from '../errors.ts'

/** Base of the runtime's typed errors; the REST layer maps each `code` to a status (src/api/errorCodes.ts). */
export class NodeError extends SluiceError {
  override name: string = 'NodeError'
  override readonly code: string = 'NODE'
}

export class NodeStoppedError extends NodeError {
  override name = 'NodeStoppedError' as const
  override readonly code = 'NODE_STOPPED' as const
  constructor(message = 'the node is stopping') {
    super(message)
  }
}

/** A transaction not mined, or not confirmed, in time: the chain layer's (where the transaction queue throws it too). */
export { ConfirmationTimeoutError } from '../chain/errors.ts'

/**
 * Our own nonce came back with content we never signed: the node's state is older than what it sent (a stale
 * backup or copy of its store). It stops signing and stops; it does not start on that state again.
 */
export class StaleStateError extends NodeError {
  override name = 'StaleStateError' as const
  override readonly code = 'STALE_STATE' as const
}

/**
 * The channel waits for its partner to confirm its latest state after a restore (docs/decisions/0034): nothing that
 * signs under its nonce (a payment over it, a withdraw, a close) runs before. It goes once the partner answers.
 */
export class ChannelNotSyncedError extends NodeError {
  override name = 'ChannelNotSyncedError' as const
  override readonly code = 'CHANNEL_NOT_SYNCED' as const
}

export class ChannelNotFoundError extends NodeError {
  override name = 'ChannelNotFoundError' as const
  override readonly code = 'CHANNEL_NOT_FOUND' as const
}

export class NoRouteError extends NodeError {
  override name = 'NoRouteError' as const
  override readonly code = 'NO_ROUTE' as const
}

/**
 * A pathfinding service could not give routes (docs/decisions/0073): `unreachable` (no connection, or a 5xx),
 * `timeout`, `malformed` (an answer that is not its API's), or `refused` (its own error answer, with raiden-services'
 * `errorCode`). The node routes locally meanwhile; only a `refused` NoRouteFound (2201) fails a payment.
 */
export class PathfindingServiceError extends NodeError {
  override name = 'PathfindingServiceError' as const
  override readonly code = 'PATHFINDING_SERVICE' as const
  readonly status: number | undefined
  readonly errorCode: number | undefined
  readonly errorDetails: unknown
  constructor(
    readonly reason: 'unreachable' | 'timeout' | 'malformed' | 'refused' | 'unusable',
    message: string,
    options: { cause?: unknown; status?: number; errorCode?: number; details?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? {} : { cause: options.cause })
    this.status = options.status
    this.errorCode = options.errorCode
    this.errorDetails = options.details
  }
}

export class InvalidPaymentError extends NodeError {
  override name = 'InvalidPaymentError' as const
  override readonly code = 'INVALID_PAYMENT' as const
}

export class PaymentFailedError extends NodeError {
  override name = 'PaymentFailedError' as const
  override readonly code = 'PAYMENT_FAILED' as const
  constructor(readonly reason: string) {
    super(`payment failed: ${reason}`)
  }
}

/** The request conflicts with the state (a deposit that does not increase, a closed channel, a reused id). */
export class ConflictError extends NodeError {
  override name = 'ConflictError' as const
  override readonly code = 'CONFLICT' as const
}

/** Not enough tokens for what was asked (gas shortfalls are the chain layer's InsufficientFundsForGasError). */
export class InsufficientBalanceError extends NodeError {
  override name = 'InsufficientBalanceError' as const
  override readonly code = 'INSUFFICIENT_BALANCE' as const
}

/** A token with no token network, or a contract the node was not configured with. */
export class NotFoundError extends NodeError {
  override name = 'NotFoundError' as const
  override readonly code = 'NOT_FOUND' as const
}

/** A contract limit would be exceeded (the registry's maximum number of token networks). */
export class LimitReachedError extends NodeError {
  override name = 'LimitReachedError' as const
  override readonly code = 'LIMIT_REACHED' as const
}

/** The action exists only on test networks (the node runs with environment production). */
export class DisabledInProductionError extends NodeError {
  override name = 'DisabledInProductionError' as const
  override readonly code = 'DISABLED_IN_PRODUCTION' as const
}

/** The chain has no TokenNetworkRegistry where the deployment says: the deployment is of another chain. */
export class DeploymentMismatchError extends NodeError {
  override name = 'DeploymentMismatchError' as const
  override readonly code = 'DEPLOYMENT_MISMATCH' as const
  constructor(readonly registry: string) {
    super(`the chain has no TokenNetworkRegistry at ${registry} (is the deployment of this chain?)`)
  }
}
