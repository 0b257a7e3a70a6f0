import type { Address, Hex } from 'viem'

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
   * Called with a peer's address when it is seen online (so the delivery layer can resend at once), and its public
   * key (64 bytes, x || y) when the adapter has it authenticated (libp2p: the PeerId inlines it): the node can then
   * encrypt a payment's secret to it before any message of it came. Register before `start`: an adapter may learn
   * of peers as soon as it starts.
   */
  onPeerSeen?(listener: (peer: Address, publicKey?: Hex) => void): void
  /**
   * Opens the way to `peer` ahead of a send (a channel partner), so that the first message does not wait for it;
   * once the peer is seen if it is not yet. A hint: nothing fails if it cannot.
   */
  connect?(peer: Address): void
  stop(): Promise<void>
}
