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
