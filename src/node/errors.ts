/** Base of the runtime's typed errors: the REST layer maps each `name` to a status code. */
export class NodeError extends Error {
  override name: string = 'NodeError'
}

export class NodeStoppedError extends NodeError {
  override name = 'NodeStoppedError' as const
  constructor() {
    super('the node is stopping')
  }
}

export class ChannelNotFoundError extends NodeError {
  override name = 'ChannelNotFoundError' as const
}

export class NoRouteError extends NodeError {
  override name = 'NoRouteError' as const
}

export class InvalidPaymentError extends NodeError {
  override name = 'InvalidPaymentError' as const
}

export class PaymentFailedError extends NodeError {
  override name = 'PaymentFailedError' as const
  constructor(readonly reason: string) {
    super(`payment failed: ${reason}`)
  }
}

/** The request conflicts with the state (a deposit that does not increase, a closed channel, a reused id). */
export class ConflictError extends NodeError {
  override name = 'ConflictError' as const
}

/** Not enough tokens for what was asked (gas shortfalls are the chain layer's InsufficientFundsForGasError). */
export class InsufficientBalanceError extends NodeError {
  override name = 'InsufficientBalanceError' as const
}

/** A token with no token network, or a contract the node was not configured with. */
export class NotFoundError extends NodeError {
  override name = 'NotFoundError' as const
}

/** A contract limit would be exceeded (the registry's maximum number of token networks). */
export class LimitReachedError extends NodeError {
  override name = 'LimitReachedError' as const
}

/** The action exists only on test networks (the node runs with environment production). */
export class DisabledInProductionError extends NodeError {
  override name = 'DisabledInProductionError' as const
}
