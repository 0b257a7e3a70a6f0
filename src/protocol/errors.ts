/** Base of every error the protocol core returns or throws: a short message plus structured details. */
export class ProtocolError extends Error {
  override name: string = 'ProtocolError'
  readonly shortMessage: string
  readonly details?: string
  constructor(shortMessage: string, options: { details?: string; cause?: unknown } = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, { cause: options.cause })
    this.shortMessage = shortMessage
    if (options.details !== undefined) this.details = options.details
  }
}

/** An untrusted message (from a peer) that is malformed: bad JSON, an unknown type, or a field out of range. */
export class InvalidMessageError extends ProtocolError {
  override name = 'InvalidMessageError' as const
  constructor(readonly field: string, reason: string) {
    super(`invalid message: ${field}: ${reason}`)
  }
}

/** A well-formed message whose signature does not come from the address it must come from. */
export class InvalidSignatureError extends ProtocolError {
  override name = 'InvalidSignatureError' as const
  constructor(reason: string) {
    super(`invalid signature: ${reason}`)
  }
}
