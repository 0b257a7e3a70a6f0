import type { Address, Hex } from 'viem'

/**
 * Carries signed protocol messages between nodes. Best effort: delivery guarantees (acknowledgements, retries,
 * ordering, deduplication) live above it, in the delivery layer. The protocol core never sees which adapter
 * carries a message.
 */
export interface Transport {
  /**
   * Starts receiving; `onMessages` gets each incoming batch of wire lines and the peer it came from. An adapter that
   * can (libp2p) reads that peer's next batch only once the promise it returns, if any, has settled: a peer sending
   * faster than its batches are taken then waits on its own stream, not in front of the others'. The promise may
   * resolve to the milliseconds the batch took, which the adapter counts against the peer (docs/decisions/0064).
   */
  start(onMessages: (lines: string[], from: Address) => unknown): Promise<void>
  /** Sends wire lines (one JSON message each) to `to`; resolves when handed to the medium, not when delivered. */
  send(to: Address, lines: string[]): Promise<void>
  /**
   * Called with a peer's address when it is seen online (so the delivery layer can resend at once), and its public
   * key (64 bytes, x || y) when the adapter has it authenticated (libp2p: the PeerId inlines it): the node can then
   * encrypt a payment's secret to it before any message of it came. Register before `start`: an adapter may learn
   * of peers as soon as it starts.
   */
  onPeerSeen?(listener: (peer: Address, publicKey?: Hex) => void): void
  /** What the adapter counts, received and refused (libp2p: `Libp2pTransportStats`), for the debug endpoint. */
  stats?(): Readonly<Record<string, number>>
  /**
   * Opens the way to `peer` ahead of a send (a channel partner), so that the first message does not wait for it;
   * once the peer is seen if it is not yet. A hint: nothing fails if it cannot.
   */
  connect?(peer: Address): void
  /**
   * A peer's signed way to reach it as a third party handed it on (a pathfinding service's `address_metadata`, a
   * LockedTransfer's route metadata; docs/decisions/0073), checked to be the peer's own: signed by the key its peer id
   * names, which is `peer`'s. With `take`, held as if a relay had delivered it (a record older than the one held is
   * ignored), so the way to the peer opens without waiting for the relays' answer. Resolves to the peer's public key
   * (64 bytes, x || y), or to why the record is not used; never rejects, whatever the third party sent.
   */
  peerRecord?(peer: Address, record: unknown, options?: { take?: boolean }): Promise<PeerRecordCheck>
  stop(): Promise<void>
}

export type PeerRecordCheck = { ok: true; publicKey: Hex } | { ok: false; reason: string }
