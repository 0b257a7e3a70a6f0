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
function webSocketsThatFailWithErrors(tls?: { cert: string; key: string }): ReturnType<typeof webSockets> {
  // With a certificate, its listeners serve WebSockets Secure (`/wss`); dials are the same either way.
  const make = webSockets(tls ? { https: { cert: tls.cert, key: tls.key } } : {})
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
 * WebRTC where the host has it (directConnections.ts, docs/decisions/0065): libp2p's transport, what it listens on
 * (`/webrtc`), and the gater's rule that only directConnections.ts dials a WebRTC address, never libp2p on its own.
 */
export type WebRtcOptions = {
  transport: NonNullable<Libp2pOptions['transports']>[number]
  listen: readonly string[]
  deniesDial: (ma: Multiaddr) => boolean
}

/** Direct paths between headless nodes (directPaths.ts, docs/decisions/0066): the listen addresses peers dial first, and which of their direct addresses we may dial now. */
export type DirectPathOptions = {
  listen: readonly string[]
  paths: Pick<DirectPaths, 'deniesDial'>
  /** The certificate and key the `/wss` listen addresses serve (PEM). */
  tls?: { cert: string; key: string }
}

/**
 * The libp2p node of a transport (docs/transport.md): WebSockets to the relays and to peers' direct addresses,
 * circuit relay v2 to reach peers by PeerId, Noise, yamux, identify, and gossipsub for presence; WebRTC where the
 * host has it. Created stopped.
 */
export function libp2pOptions(
  privateKey: PrivateKey,
  relays: readonly RelayAddress[],
  { webrtc, direct }: { webrtc?: WebRtcOptions | undefined; direct?: DirectPathOptions | undefined } = {},
): Libp2pOptions<Services> {
  const denied = deniesDial(relays, direct?.paths)
  return {
    start: false,
    privateKey,
    // One `/p2p-circuit` per relay: each asks circuit relay v2's reservation store for one reservation on a relay it
    // finds (a connected peer that speaks the hop protocol), so the node holds one on each of its relays. Unlike a
    // listen address naming a relay (`<relay>/p2p-circuit`), such a reservation is asked for again on any relay
    // once it is lost: when that relay comes back, it is reserved on again.
    // And the direct listen addresses (`--p2p-listen`), which peers dial first (directPaths.ts), and WebRTC's.
    addresses: { listen: [...relays.map(() => '/p2p-circuit'), ...(direct?.listen ?? []), ...(webrtc?.listen ?? [])] },
    // The relays are tagged keep-alive (relayKeeper.ts): libp2p redials one that drops, each second until it is back.
    // A relayed connection's address starts with its relay's, so libp2p counted every peer reaching us through one
    // relay as one host, 5 new connections a second: a sixth peer's dial hung until its timeout (libp2p takes no
    // more and closes nothing), and one peer dialling 5 times a second kept everyone else out. The relay limits new
    // circuits per peer and per address (decision 0064).
    connectionManager: {
      reconnectRetries: Number.POSITIVE_INFINITY,
      reconnectRetryInterval: relayRedialMs,
      reconnectBackoffFactor: 1,
      inboundConnectionThreshold: Number.MAX_SAFE_INTEGER,
      maxIncomingPendingConnections: 64,
    },
    transports: [webSocketsThatFailWithErrors(direct?.tls), circuitRelayTransport(), ...(webrtc ? [webrtc.transport] : [])],
    connectionEncrypters: [noise()],
    streamMuxers: [yamuxMuxer()],
    // A WebRTC address is a circuit too: WebRTC's rule comes first.
    connectionGater: { denyDialMultiaddr: (ma) => webrtc?.deniesDial(ma) === true || denied(ma) },
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
