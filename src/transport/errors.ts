/** Base of the errors the transport layer throws. */
export class TransportError extends Error {
  override name: string = 'TransportError'
}

/** A transport was used before `start` or after `stop`. */
export class TransportClosedError extends TransportError {
  override name = 'TransportClosedError' as const
  constructor(operation: string) {
    super(`transport is not running: cannot ${operation}`)
  }
}
