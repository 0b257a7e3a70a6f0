import { SluiceError } from '../errors.ts'
/** Base of the errors the transport layer throws. */
export class TransportError extends SluiceError {
  override name: string = 'TransportError'
  override readonly code: string = 'TRANSPORT'
}

/** A transport was used before `start` or after `stop`. */
export class TransportClosedError extends TransportError {
  override name = 'TransportClosedError' as const
  override readonly code = 'TRANSPORT_CLOSED' as const
  constructor(operation: string) {
    super(`transport is not running: cannot ${operation}`)
  }
}

/** A key that cannot be a libp2p identity (not 32 bytes, not secp256k1). */
export class InvalidPeerKeyError extends TransportError {
  override name = 'InvalidPeerKeyError' as const
  override readonly code = 'INVALID_PEER_KEY' as const
}

/** No way to reach this address is known yet: it has neither announced its presence nor connected to us. */
export class PeerUnknownError extends TransportError {
  override name = 'PeerUnknownError' as const
  override readonly code = 'PEER_UNKNOWN' as const
  constructor(readonly peer: string) {
    super(`no route to ${peer} is known yet (it has not announced itself)`)
  }
}

/** The peer is known but could not be reached now (offline, no reservation on the relay, stream failed). */
export class PeerUnreachableError extends TransportError {
  override name = 'PeerUnreachableError' as const
  override readonly code = 'PEER_UNREACHABLE' as const
  constructor(
    readonly peer: string,
    cause: unknown,
  ) {
    super(`cannot reach ${peer}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
  }
}

/** A relay multiaddr that cannot be used: unparsable, or without the relay's /p2p/<peer id>. */
export class InvalidRelayAddressError extends TransportError {
  override name = 'InvalidRelayAddressError' as const
  override readonly code = 'INVALID_RELAY_ADDRESS' as const
  constructor(
    readonly address: string,
    reason: string,
  ) {
    super(`relay address ${JSON.stringify(address)} ${reason}`)
  }
}

/** The runtime lacks what libp2p needs (Node 20: `Promise.withResolvers` and a global `WebSocket`). */
export class MissingRuntimeFeatureError extends TransportError {
  override name = 'MissingRuntimeFeatureError' as const
  override readonly code = 'MISSING_RUNTIME_FEATURE' as const
  constructor(readonly feature: string) {
    super(`${feature} is missing: on Node 20, import src/transport/libp2p/nodePolyfills.ts before starting libp2p`)
  }
}
