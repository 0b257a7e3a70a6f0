import { KEEP_ALIVE, type Libp2p, type PeerId } from '@libp2p/interface'
import { isCircuit, type RelayAddress } from './relayAddress.ts'

export type RelayKeeperLogEvent = { type: 'relayConnected'; relay: string } | { type: 'relayLost'; relay: string; error?: unknown }

export type RelayKeeperParameters = {
  relays: readonly RelayAddress[]
  /** Give up one dial of a relay after this long. */
  dialTimeoutMs: number
  /** A relay lost earlier is connected again (not called for a first connection). */
  onRelayBack?: (relay: RelayAddress) => void
  log?: (event: RelayKeeperLogEvent) => void
}

/** Ours among libp2p's keep-alive tags: its connection manager redials a peer that carries one when it drops. */
export const relayTag = `${KEEP_ALIVE}-sluice-relay`

type Dialling = { timer?: ReturnType<typeof setTimeout>; dialing?: boolean; delay: number }

/**
 * Keeps a libp2p node connected to every one of its relays (docs/transport.md, Relays). Each relay is tagged
 * keep-alive, so libp2p's own reconnection redials one that drops (`reconnectRetries`, libp2pOptions.ts); the keeper
 * dials each at start, and goes on dialling one it never reached (down at start: libp2p redials only what it had),
 * backing off from 250 ms to 10 s. circuit relay v2 reserves on a relay whenever it connects to one.
 */
export class RelayKeeper {
  readonly #parameters: RelayKeeperParameters
  /** Relays never reached yet, being dialled. */
  readonly #dialling = new Map<string, Dialling>()
  /** Relays connected once: a later connection is one coming back. */
  readonly #reached = new Set<string>()
  #node: Libp2p | undefined

  constructor(parameters: RelayKeeperParameters) {
    this.#parameters = parameters
  }

  /** Tags and dials every relay through `node`, until `stop`. */
  async start(node: Libp2p): Promise<void> {
    this.#node = node
    node.addEventListener('peer:connect', this.#onConnect)
    node.addEventListener('peer:disconnect', this.#onDisconnect)
    node.addEventListener('peer:reconnect-failure', this.#onReconnectFailure)
    for (const relay of this.#parameters.relays) {
      await node.peerStore.merge(relay.peerId, { multiaddrs: [relay.addr], tags: { [relayTag]: { value: 1 } } }).catch(() => {})
      this.#dial(relay)
    }
  }

  /** Where the node can be dialled now: its circuit addresses, one per relay it holds a reservation on. */
  circuitAddresses(): string[] {
    return this.#node ? this.#node.getMultiaddrs().filter(isCircuit).map(String) : []
  }

  /** The relays this node is connected to now. */
  connected(): RelayAddress[] {
    const node = this.#node
    return node ? this.#parameters.relays.filter((r) => node.getConnections(r.peerId).length > 0) : []
  }

  /** Whether a reservation came within `timeoutMs` (polled: libp2p reports address changes up to a second late). */
  async waitForReservation(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (this.#node && this.circuitAddresses().length === 0) {
      if (Date.now() > deadline) return false
      await new Promise((r) => setTimeout(r, 20))
    }
    return this.#node !== undefined
  }

  /** Dials no more, and untags the relays so that libp2p redials them no more either. */
  async stop(): Promise<void> {
    const node = this.#node
    this.#node = undefined
    node?.removeEventListener('peer:connect', this.#onConnect)
    node?.removeEventListener('peer:disconnect', this.#onDisconnect)
    node?.removeEventListener('peer:reconnect-failure', this.#onReconnectFailure)
    for (const dialling of this.#dialling.values()) clearTimeout(dialling.timer)
    this.#dialling.clear()
    this.#reached.clear()
    for (const relay of this.#parameters.relays) await node?.peerStore.merge(relay.peerId, { tags: { [relayTag]: undefined } }).catch(() => {})
  }

  #relayOf(peerId: PeerId): RelayAddress | undefined {
    return this.#parameters.relays.find((r) => r.peerId.equals(peerId))
  }

  readonly #onConnect = (event: CustomEvent<PeerId>) => {
    const relay = this.#relayOf(event.detail)
    if (!relay || !this.#node) return
    const id = relay.peerId.toString()
    clearTimeout(this.#dialling.get(id)?.timer)
    this.#dialling.delete(id)
    this.#parameters.log?.({ type: 'relayConnected', relay: relay.addr.toString() })
    if (this.#reached.has(id)) this.#parameters.onRelayBack?.(relay)
    this.#reached.add(id)
  }

  readonly #onDisconnect = (event: CustomEvent<PeerId>) => {
    const relay = this.#relayOf(event.detail)
    if (relay && this.#node) this.#parameters.log?.({ type: 'relayLost', relay: relay.addr.toString() })
  }

  /** libp2p gave up redialling (it removed the tag): tag it again and dial it ourselves until it is back. */
  readonly #onReconnectFailure = (event: CustomEvent<PeerId>) => {
    const relay = this.#relayOf(event.detail)
    const node = this.#node
    if (!relay || !node) return
    void node.peerStore.merge(relay.peerId, { tags: { [relayTag]: { value: 1 } } }).catch(() => {})
    this.#dial(relay)
  }

  /** Dials a relay until it is connected, backing off to 10 s; `#onConnect` ends it. */
  #dial(relay: RelayAddress): void {
    const { dialTimeoutMs, log } = this.#parameters
    const id = relay.peerId.toString()
    const dialling = this.#dialling.get(id) ?? { delay: 250 }
    this.#dialling.set(id, dialling)
    if (dialling.timer !== undefined || dialling.dialing || !this.#node) return
    const attempt = () => {
      dialling.timer = undefined
      const node = this.#node
      if (!node || this.#dialling.get(id) !== dialling) return
      if (node.getConnections(relay.peerId).length > 0) return
      dialling.dialing = true
      node
        .dial(relay.addr, { signal: AbortSignal.timeout(dialTimeoutMs) })
        .finally(() => (dialling.dialing = false))
        .then(
          () => {},
          (error: unknown) => {
            log?.({ type: 'relayLost', relay: relay.addr.toString(), error })
            if (!this.#node || this.#dialling.get(id) !== dialling) return
            dialling.timer = setTimeout(attempt, dialling.delay)
            dialling.delay = Math.min(dialling.delay * 2, 10_000)
          },
        )
    }
    attempt()
  }
}
