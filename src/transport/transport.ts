import type { Address } from 'viem'

/**
 * Carries signed protocol messages between nodes. Best effort: delivery guarantees (acknowledgements, retries,
 * ordering, deduplication) live above it, in the delivery layer. The protocol core never sees which adapter
 * carries a message.
 */
export interface Transport {
  /** Starts receiving; `onMessages` gets each incoming batch of wire lines and the peer it came from. */
  start(onMessages: (lines: string[], from: Address) => void): Promise<void>
  /** Sends wire lines (one JSON message each) to `to`; resolves when handed to the medium, not when delivered. */
  send(to: Address, lines: string[]): Promise<void>
  /**
   * Called with a peer's address when it is seen online (so the delivery layer can resend at once). Register
   * before `start`: an adapter may learn of peers as soon as it starts.
   */
  onPeerSeen?(listener: (peer: Address) => void): void
  stop(): Promise<void>
}
