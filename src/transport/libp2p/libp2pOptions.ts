import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { ConnectionFailedError, type PrivateKey } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { isPrivate } from '@libp2p/utils'
import { webSockets } from '@libp2p/websockets'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Libp2pOptions } from 'libp2p'
import type { DirectPaths } from './directPaths.ts'
import { isCircuit, withoutPeerId, type RelayAddress } from './relayAddress.ts'
import { yamuxMuxer } from './yamuxMuxer.ts'

export type Services = { identify: unknown; pubsub: GossipSub; sockets: Sockets }

/** Where the node's own sockets listen (its direct listen addresses, the port chosen for a port 0), without /p2p/. */
export type Sockets = { addresses(): string[] }

/** How often libp2p redials a relay that dropped, until it is back: a dial refused costs one WebSocket attempt. */
export const relayRedialMs = 1_000

/**
 * Whether a dial to `ma` is refused. Our configured relays and circuits are always allowed (browsers refuse loopback
 * and private addresses by default, which would rule out a local relay in dev and tests). Any other address is a
 * peer's direct one: only those the direct paths dial now (directPaths.ts, which checks them), never one libp2p
 * picks on its own from what a peer listed in identify. Without direct paths, other private addresses are refused.
 */
export function deniesDial(relays: readonly RelayAddress[], direct?: Pick<DirectPaths, 'deniesDial'>): (ma: Multiaddr) => boolean {
  const relayAddrs = new Set(relays.map((r) => withoutPeerId(r.addr)))
  return (ma) => {
    if (relayAddrs.has(withoutPeerId(ma)) || isCircuit(ma)) return false
    return direct ? direct.deniesDial(ma) : isPrivate(ma) === true
  }
}

/**
 * WebSockets whose failed dials reject with an Error. @libp2p/websockets rejects a refused connection with the
 * socket's `error` event itself, and p-retry, under libp2p's reconnection of keep-alive peers, gives up at once on
 * anything that is not an Error ("Non-error was thrown"): a relay down for a moment was never redialled.
 */
function webSocketsThatFailWithErrors(): ReturnType<typeof webSockets> {
  const make = webSockets()
  return (components) => {
    const transport = make(components)
    const dial = transport.dial.bind(transport)
    transport.dial = async (ma, options) => {
      try {
        return await dial(ma, options)
      } catch (error) {
        throw error instanceof Error ? error : new ConnectionFailedError(`could not connect to ${ma.toString()}`)
      }
    }
    return transport
  }
}

/**
 * The libp2p node of a transport (docs/transport.md): WebSockets to the relays and to peers' direct addresses,
 * circuit relay v2 to reach peers by PeerId, Noise, yamux, identify, and gossipsub for presence. Created stopped.
 */
export function libp2pOptions(
  privateKey: PrivateKey,
  relays: readonly RelayAddress[],
  direct?: { listen: readonly string[]; paths: Pick<DirectPaths, 'deniesDial'> },
): Libp2pOptions<Services> {
  return {
    start: false,
    privateKey,
    // One `/p2p-circuit` per relay: each asks circuit relay v2's reservation store for one reservation on a relay it
    // finds (a connected peer that speaks the hop protocol), so the node holds one on each of its relays. Unlike a
    // listen address naming a relay (`<relay>/p2p-circuit`), such a reservation is asked for again on any relay
    // once it is lost: when that relay comes back, it is reserved on again.
    // And the direct listen addresses (`--p2p-listen`), which peers dial first (directPaths.ts).
    addresses: { listen: [...relays.map(() => '/p2p-circuit'), ...(direct?.listen ?? [])] },
    // The relays are tagged keep-alive (relayKeeper.ts): libp2p redials one that drops, each second until it is back.
    connectionManager: { reconnectRetries: Number.POSITIVE_INFINITY, reconnectRetryInterval: relayRedialMs, reconnectBackoffFactor: 1 },
    transports: [webSocketsThatFailWithErrors(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamuxMuxer()],
    connectionGater: { denyDialMultiaddr: deniesDial(relays, direct?.paths) },
    services: {
      identify: identify(),
      pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, runOnLimitedConnection: true, doPX: false }),
      // libp2p lists a public listen address only once AutoNAT confirmed it; the sockets are what we listen on.
      sockets: (components: { transportManager: { getAddrs(): { toString(): string }[] } }): Sockets => ({
        addresses: () => components.transportManager.getAddrs().map(String),
      }),
    },
  }
}
