import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import { ConnectionFailedError, type PrivateKey } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { isPrivate } from '@libp2p/utils'
import { webSockets } from '@libp2p/websockets'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Libp2pOptions } from 'libp2p'
import { isCircuit, withoutPeerId, type RelayAddress } from './relayAddress.ts'
import { yamuxMuxer } from './yamuxMuxer.ts'

export type Services = { identify: unknown; pubsub: GossipSub }

/** How often libp2p redials a relay that dropped, until it is back: a dial refused costs one WebSocket attempt. */
export const relayRedialMs = 1_000

/**
 * Whether a dial to `ma` is refused. Browsers refuse loopback and private addresses by default, which would rule
 * out a local relay (dev, tests). Our configured relays and circuits are always allowed; other private addresses
 * (which a peer could list in identify) are refused everywhere.
 */
export function deniesDial(relays: readonly RelayAddress[]): (ma: Multiaddr) => boolean {
  const relayAddrs = new Set(relays.map((r) => withoutPeerId(r.addr)))
  return (ma) => !relayAddrs.has(withoutPeerId(ma)) && !isCircuit(ma) && isPrivate(ma) === true
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
 * WebRTC where the host has it (directConnections.ts, docs/decisions/0065): libp2p's transport, what it listens on
 * (`/webrtc`), and the gater's rule that only directConnections.ts dials a WebRTC address, never libp2p on its own.
 */
export type DirectOptions = {
  transport: NonNullable<Libp2pOptions['transports']>[number]
  listen: readonly string[]
  deniesDial: (ma: Multiaddr) => boolean
}

/**
 * The libp2p node of a transport (docs/transport.md): WebSockets to the relays, circuit relay v2 to reach peers
 * by PeerId, Noise, yamux, identify, and gossipsub for presence. Created stopped.
 */
export function libp2pOptions(privateKey: PrivateKey, relays: readonly RelayAddress[], direct?: DirectOptions): Libp2pOptions<Services> {
  const denied = deniesDial(relays)
  return {
    start: false,
    privateKey,
    // One `/p2p-circuit` per relay: each asks circuit relay v2's reservation store for one reservation on a relay it
    // finds (a connected peer that speaks the hop protocol), so the node holds one on each of its relays. Unlike a
    // listen address naming a relay (`<relay>/p2p-circuit`), such a reservation is asked for again on any relay
    // once it is lost: when that relay comes back, it is reserved on again.
    addresses: { listen: [...relays.map(() => '/p2p-circuit'), ...(direct?.listen ?? [])] },
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
    transports: [webSocketsThatFailWithErrors(), circuitRelayTransport(), ...(direct ? [direct.transport] : [])],
    connectionEncrypters: [noise()],
    streamMuxers: [yamuxMuxer()],
    connectionGater: { denyDialMultiaddr: (ma) => direct?.deniesDial(ma) === true || denied(ma) },
    services: {
      identify: identify(),
      pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, runOnLimitedConnection: true, doPX: false }),
    },
  }
}
