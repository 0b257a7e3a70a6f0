import { SluiceError } from '../errors.ts'

/** Base of every error the protocol core returns or throws: a short message plus structured details. */
export class ProtocolError extends SluiceError {
  override name: string = 'ProtocolError'
  override readonly code: string = 'PROTOCOL'
}

/** An untrusted message (from a peer) that is malformed: bad JSON, an unknown type, or a field out of range. */
export class InvalidMessageError extends ProtocolError {
  override name = 'InvalidMessageError' as const
  override readonly code = 'INVALID_MESSAGE' as const
  constructor(
    readonly field: string,
    reason: string,
  ) {
    super(`invalid message: ${field}: ${reason}`)
  }
}

/** A well-formed message whose signature does not come from the address it must come from. */
export class InvalidSignatureError extends ProtocolError {
  override name = 'InvalidSignatureError' as const
  override readonly code = 'INVALID_SIGNATURE' as const
  constructor(reason: string) {
    super(`invalid signature: ${reason}`)
  }
}
