import './nodePolyfills.ts'
import { circuitRelayServer, type CircuitRelayService } from '@libp2p/circuit-relay-v2'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { PrivateKey } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { webSockets } from '@libp2p/websockets'
import { yamuxMuxer } from './yamuxMuxer.ts'
import { createLibp2p } from 'libp2p'
import type { Hex } from 'viem'
import type { DropCounts } from './dropLog.ts'
import { libp2pPrivateKey } from './peerIdentity.ts'
import { presenceProtocol, presenceTopic as defaultPresenceTopic } from './protocol.ts'
import { PresenceRegistry } from './presenceRegistry.ts'
import { RelayLimits, type RelayDropReason, type RelayLimitsParameters } from './relayLimits.ts'

export type StartRelayParameters = {
  /**
   * Multiaddrs to listen on, e.g. `/ip4/127.0.0.1/tcp/9090/ws`, or `/ip4/0.0.0.0/tcp/443/wss` with `tls` (port 0 picks
   * a free one).
   */
  listen: readonly string[]
  /**
   * The certificate (PEM, the chain after it as certbot's fullchain.pem has it) and its private key (PEM) that a
   * `/wss` listen address serves: a page served over HTTPS may open WebSockets Secure only.
   */
  tls?: { cert: string; key: string }
  /**
   * The addresses the relay gives out in place of those it listens on (without /p2p/): for a relay behind a
   * reverse proxy or known by a DNS name, `/dns4/relay.example.com/tcp/443/wss`. Nodes build their circuit
   * addresses from them, so they must be what other nodes can dial.
   */
  announce?: readonly string[]
  /** A 32-byte secp256k1 key, so that the relay keeps its PeerId across restarts; a new Ed25519 key if absent. */
  privateKey?: Hex
  /** How many peers may hold a reservation at once (default 1000; libp2p's default of 15 is far too few). */
  maxReservations?: number
  /**
   * What one peer and one IP address may cost the relay (docs/decisions/0064): `maxConnectionRate`, new connections
   * one address may open a second (default 100: libp2p's default of 5 turns away browsers behind one carrier-grade
   * NAT or office router, which share an address, when they come at once), and the others, each with its default.
   */
  limits?: RelayLimitsParameters
  /**
   * Told what the relay refused, dropped or held back: for each peer or address that had any, one call per
   * `dropReportIntervalMs` (default 60 s) at most, with the count of each reason; and once more at stop.
   */
  onDrops?: (source: string, counts: DropCounts<RelayDropReason>) => void
  dropReportIntervalMs?: number
  /** The presence topic the relay joins as a hub (default `sluice/presence/1`). */
  presenceTopic?: string
  /** Keep a presence registry (default true); false makes a relay as they were before it, for the tests of those. */
  presenceRegistry?: boolean
}

export type RelayStats = {
  /** Peers holding a reservation now. */
  reservations: number
  /** Connections open now (handshakes included). */
  connections: number
  /** What was refused, dropped or held back since start, by why (`relayDropReasons`). */
  drops: Record<RelayDropReason, number>
}

export type Relay = {
  readonly peerId: string
  /** The addresses clients configure: each announce address, else each listen address, with /p2p/<relay peer id>. */
  readonly multiaddrs: string[]
  /** Where its sockets listen, without /p2p/ (the port chosen for a port 0): what `multiaddrs` holds without `announce`. */
  readonly listening: string[]
  /** How many peers hold a reservation now. */
  reservations(): number
  /** How many relayed connections go through it now (one per circuit, both directions alike). */
  circuits(): number
  stats(): RelayStats
  /** Its presence registry: the records it keeps, the addresses watched, and the watches in all. */
  presence(): { records: number; watched: number; watches: number }
  stop(): Promise<void>
}

/**
 * A relay/bootstrap node (Node only): a circuit relay v2 server through which browser and Node nodes reach each
 * other by PeerId, the presence registry that hands each node's record to the nodes that watch it, and the gossipsub
 * hub of the first presence topic (for nodes from before the registry). Relayed connections have no data or time limit
 * (libp2p's defaults, 128 KiB and 2 min per connection, cut payment traffic short: docs/transport.md, Relays).
 */
export async function startRelay(parameters: StartRelayParameters): Promise<Relay> {
  const topic = parameters.presenceTopic ?? defaultPresenceTopic
  const privateKey: PrivateKey = parameters.privateKey ? libp2pPrivateKey(parameters.privateKey) : await generateKeyPair('Ed25519')
  const limits = new RelayLimits(parameters.limits, {
    ...(parameters.onDrops ? { report: parameters.onDrops } : {}),
    ...(parameters.dropReportIntervalMs !== undefined ? { intervalMs: parameters.dropReportIntervalMs } : {}),
  })
  const node = await createLibp2p<{ identify: unknown; relay: CircuitRelayService; pubsub: GossipSub; sockets: { addresses(): string[] } }>({
    privateKey,
    addresses: { listen: [...parameters.listen], announce: [...(parameters.announce ?? [])] },
    // With `tls`, @libp2p/websockets answers a /wss (or /tls/ws) listen address with a node:https server made with
    // these options; a /ws one stays plain.
    transports: [webSockets(parameters.tls ? { https: { cert: parameters.tls.cert, key: parameters.tls.key } } : {})],
    connectionEncrypters: [noise()],
    streamMuxers: [yamuxMuxer()],
    // Every client holds one connection to its relay; the default cap would turn clients away. New connections an
    // address may open a second are counted by the limits (libp2p's own count tells nobody what it refused).
    // 128 handshakes at once in all (libp2p's 10 are one address's worth), at most 8 of one address (the limits).
    connectionManager: { maxConnections: 10_000, inboundConnectionThreshold: Number.MAX_SAFE_INTEGER, maxIncomingPendingConnections: 128 },
    connectionGater: limits.gater,
    services: {
      identify: identify(),
      relay: circuitRelayServer({
        reservations: { maxReservations: parameters.maxReservations ?? 1000, applyDefaultLimit: false },
        maxInboundHopStreams: 10_000,
        maxOutboundStopStreams: 10_000,
      }),
      // A hub keeps every subscriber in its mesh (Dhi), so an announcement reaches all of them in one hop. No IP
      // colocation penalty: it scored every peer past the tenth on one address below zero (browsers behind one NAT,
      // every node of a test), and the hub then dropped their announcements, for an hour after they left. Each
      // announcement is signed and validated; what one address may cost the relay is the relay's own limit.
      // Only the presence topic; an RPC (a few announcements and control messages) is far below 1 MiB, and one past it
      // is not even decoded.
      pubsub: gossipsub({
        allowPublishToZeroTopicPeers: true,
        runOnLimitedConnection: true,
        doPX: false,
        Dhi: 10_000,
        scoreParams: { IPColocationFactorWeight: 0 },
        allowedTopics: [topic],
        maxInboundDataLength: 1024 * 1024,
      }),
      // The socket addresses, which getMultiaddrs() replaces with the announced ones: the components are libp2p's
      // way for a service to see them.
      sockets: (components: { transportManager: { getAddrs(): { toString(): string }[] } }) => ({
        addresses: () => components.transportManager.getAddrs().map(String),
      }),
    },
  })
  limits.watch({ reservations: () => node.services.relay.reservations.entries(), connectionsOf: (peer) => node.getConnections(peer) })
  const pubsub = node.services.pubsub
  pubsub.topicValidators.set(topic, limits.validateAnnouncement)
  pubsub.subscribe(topic)
  // Presence v2: each node's signed record, handed to those who watch its address. Two streams per connection at
  // most (one, and its replacement while the first is being torn down).
  const registry = new PresenceRegistry()
  if (parameters.presenceRegistry !== false) {
    await node.handle(presenceProtocol, (stream, connection) => void registry.serve(stream, connection.remotePeer, limits.presenceAdmission(connection)), {
      maxInboundStreams: 2,
    })
    node.addEventListener('peer:disconnect', (e) => registry.left(e.detail))
  }
  return {
    peerId: node.peerId.toString(),
    multiaddrs: node.getMultiaddrs().map(String),
    listening: node.services.sockets.addresses(),
    reservations: () => node.services.relay.reservations.size,
    // Each circuit is one stop stream from the relay to the peer dialled.
    circuits: () => node.getConnections().reduce((n, c) => n + c.streams.filter((s) => s.protocol === '/libp2p/circuit/relay/0.2.0/stop').length, 0),
    stats: () => ({ reservations: node.services.relay.reservations.size, connections: limits.connections, drops: limits.drops.totals() }),
    presence: () => registry.stats(),
    stop: async () => {
      registry.stop()
      await node.stop()
      limits.stop()
    },
  }
}
