import type { Libp2p, PeerId } from '@libp2p/interface'
import { isCircuit, type RelayAddress } from './relayAddress.ts'

export type RelayKeeperLogEvent = { type: 'relayConnected'; relay: string } | { type: 'relayLost'; relay: string; error?: unknown }

export type RelayKeeperParameters = {
  relays: readonly RelayAddress[]
  /** Give up one dial of a relay after this long. */
  dialTimeoutMs: number
  log?: (event: RelayKeeperLogEvent) => void
}

type Retry = { timer?: ReturnType<typeof setTimeout>; dialing?: boolean; delay: number }

/**
 * Keeps a libp2p node connected to its relays (docs/transport.md, Relays): dials each at start, and again when its
 * connection drops, backing off from 250 ms to 10 s while it is down (it may be restarting). libp2p's circuit relay
 * transport reserves on a relay whenever it connects to one; the keeper only holds the connections.
 */
export class RelayKeeper {
  readonly #parameters: RelayKeeperParameters
  readonly #retries = new Map<string, Retry>()
  #node: Libp2p | undefined

  constructor(parameters: RelayKeeperParameters) {
    this.#parameters = parameters
  }

  /** Dials every relay through `node`, and again each time one is lost, until `stop`. */
  start(node: Libp2p): void {
    this.#node = node
    node.addEventListener('peer:disconnect', this.#onDisconnect)
    for (const relay of this.#parameters.relays) this.#dial(relay)
  }

  /** Where the node can be dialled now: its circuit addresses, one per relay it holds a reservation on. */
  circuitAddresses(): string[] {
    return this.#node ? this.#node.getMultiaddrs().filter(isCircuit).map(String) : []
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

  stop(): void {
    this.#node?.removeEventListener('peer:disconnect', this.#onDisconnect)
    this.#node = undefined
    for (const retry of this.#retries.values()) clearTimeout(retry.timer)
    this.#retries.clear()
  }

  readonly #onDisconnect = (event: CustomEvent<PeerId>) => {
    const relay = this.#parameters.relays.find((r) => r.peerId.equals(event.detail))
    if (!relay || !this.#node) return
    this.#parameters.log?.({ type: 'relayLost', relay: relay.addr.toString() })
    this.#dial(relay)
  }

  #dial(relay: RelayAddress): void {
    const { dialTimeoutMs, log } = this.#parameters
    const id = relay.peerId.toString()
    const retry = this.#retries.get(id) ?? { delay: 250 }
    this.#retries.set(id, retry)
    if (retry.timer !== undefined || retry.dialing || !this.#node) return
    const attempt = () => {
      retry.timer = undefined
      const node = this.#node
      if (!node) return
      if (node.getConnections(relay.peerId).length > 0) return
      retry.dialing = true
      node
        .dial(relay.addr, { signal: AbortSignal.timeout(dialTimeoutMs) })
        .finally(() => (retry.dialing = false))
        .then(
          () => {
            retry.delay = 250
            log?.({ type: 'relayConnected', relay: relay.addr.toString() })
          },
          (error: unknown) => {
            log?.({ type: 'relayLost', relay: relay.addr.toString(), error })
            if (!this.#node) return
            retry.timer = setTimeout(attempt, retry.delay)
            retry.delay = Math.min(retry.delay * 2, 10_000)
          },
        )
    }
    attempt()
  }
}
