/**
 * Which transport a headless node uses, and what its log says of libp2p: light (types only), so that
 * `sluice serve --help` loads no node code.
 */
import type { Logger } from '../log/logger.ts'
import type { Libp2pTransportParameters } from '../transport/libp2p/libp2pTransport.ts'

export const transports = ['libp2p', 'broadcast'] as const

/** A headless node's direct paths (`--p2p-listen`, `--p2p-announce`, `--p2p-allow-private`; docs/transport.md). */
export type DirectSettings = {
  listen: readonly string[]
  announce: readonly string[]
  allowPrivate: boolean
  /** The certificate (its chain after it) and key the listen addresses serve TLS with (`/wss`), in PEM. */
  tls?: { cert: string; key: string }
}
export type TransportName = (typeof transports)[number]

/**
 * The transport asked for, or libp2p when relays are given and broadcast when not; libp2p needs a relay to meet
 * other nodes, and relays mean nothing to broadcast. What is wrong, for the caller to say in its own words.
 */
export function chooseTransport(given: TransportName | undefined, relays: readonly string[]): TransportName | 'libp2p without relay' | 'relay without libp2p' {
  const transport = given ?? (relays.length > 0 ? 'libp2p' : 'broadcast')
  if (transport === 'libp2p' && relays.length === 0) return 'libp2p without relay'
  if (transport !== 'libp2p' && relays.length > 0) return 'relay without libp2p'
  return transport
}

type Libp2pLogEvent = Parameters<NonNullable<Libp2pTransportParameters['log']>>[0]

/**
 * What the operator should hear of the libp2p transport: when the node becomes reachable, when it cannot get a
 * reservation, when it loses a relay it had and gets it back (not every failed redial while it is away), and when a
 * direct connection with a peer opens, fails or closes.
 */
export function libp2pLog(log: Pick<Logger, 'info' | 'warn'>): (event: Libp2pLogEvent) => void {
  const connected = new Set<string>()
  const lost = new Set<string>()
  return (event) => {
    switch (event.type) {
      case 'relayConnected':
        connected.add(event.relay)
        if (lost.delete(event.relay)) log.info('libp2p: reconnected to the relay {relay}', { relay: event.relay })
        break
      case 'relayLost':
        if (connected.delete(event.relay)) {
          lost.add(event.relay)
          log.warn('libp2p: lost the relay {relay}; reconnecting', { relay: event.relay })
        }
        break
      case 'reserved':
        log.info('libp2p: reachable at {addresses}', { addresses: event.addresses })
        break
      case 'directOpen':
        log.info('libp2p: direct connection with {peer} ({direction}); its messages go over it', { peer: event.peer, direction: event.direction })
        break
      case 'directClosed':
        log.info('libp2p: direct connection with {peer} closed; its messages go through a relay', { peer: event.peer })
        break
      case 'directFailed':
        log.info('libp2p: no direct connection with {peer} ({error}); through a relay, direct again in {seconds} s', {
          peer: event.peer,
          error: event.error instanceof Error ? event.error.message : String(event.error),
          seconds: Math.round(event.retryInMs / 1000),
        })
        break
      case 'noReservation':
        log.warn('libp2p: no reservation on any relay after {seconds} s (is the relay up?); still trying', { seconds: Math.round(event.afterMs / 1000) })
        break
    }
  }
}
