import { TopicValidatorResult, type Message as PubsubMessage } from '@libp2p/gossipsub'
import type { Connection, PeerId, Stream } from '@libp2p/interface'
import { createLibp2p, type Libp2p, type Libp2pOptions } from 'libp2p'
import type { Address, Hex } from 'viem'
import { MissingRuntimeFeatureError, PeerUnknownError, TransportClosedError, TransportError } from '../errors.ts'
import type { Transport } from '../transport.ts'
import { openAddressMetadata } from './addressMetadata.ts'
import { Announcer } from './announcer.ts'
import { createDirectConnections, isWebRtc, type DirectConnectionsLogEvent } from './directConnections.ts'
import { DirectPaths, type DirectPathsLogEvent } from './directPaths.ts'
import { encodeFrames } from './frames.ts'
import { InboundStreams, type InboundCounters, type InboundLimits } from './inboundStreams.ts'
import { libp2pOptions, type Services } from './libp2pOptions.ts'
import { OutboundStreams } from './outboundStreams.ts'
import { PeerDirectory, type Heard, type PeerSeenEvent } from './peerDirectory.ts'
import { addressOfPeer, identityOfPeer, libp2pPrivateKey, peerIdOfKey } from './peerIdentity.ts'
import { encodeAnnouncement, maxAddresses, readAnnouncement, signRecord, type PresenceRecord } from './presence.ts'
import { PresenceBook } from './presenceBook.ts'
import { PresenceLinks } from './presenceLinks.ts'
import { messageProtocol, presenceProtocol, presenceTopic as defaultPresenceTopic } from './protocol.ts'
import { isCircuit, parseRelay } from './relayAddress.ts'
import { RelayKeeper } from './relayKeeper.ts'

export type Libp2pTransportParameters = {
  /** The node's Ethereum private key: it is also its libp2p identity (secp256k1). */
  privateKey: Hex
  /** Relay multiaddrs, each ending in /p2p/<relay peer id> (what `sluice relay` prints). */
  relays: readonly string[]
  /** The gossipsub topic of presence announcements (default `sluice/presence/1`). */
  presenceTopic?: string
  /**
   * Milliseconds between presence announcements (default 4 min: a relay's registry keeps the record and hands on each
   * change, so the interval only keeps it within receivers' 10-minute clock window); also sent on start and whenever
   * the node's addresses change.
   */
  announceIntervalMs?: number
  /** Give up opening a stream to a peer after this long (default 5 s). */
  dialTimeoutMs?: number
  /** Give up writing a batch to an open stream after this long (default 10 s). */
  sendTimeoutMs?: number
  /** `start` waits this long for a relay reservation, then resolves anyway and keeps trying (default 10 s). */
  startTimeoutMs?: number
  /**
   * Multiaddrs to listen on for direct connections from other nodes (`--p2p-listen`), WebSockets:
   * `/ip4/0.0.0.0/tcp/4001/ws`. Announced beside the circuit addresses (or `announce` in their place); peers dial them
   * first and the relay is the fallback (directPaths.ts). A page cannot listen.
   */
  listen?: readonly string[]
  /**
   * The direct addresses announced in place of the listen ones (`--p2p-announce`), without /p2p/: a node behind a
   * NAT with a forwarded port or a TLS proxy, `/dns4/node.example.com/tcp/443/wss`.
   */
  announce?: readonly string[]
  /**
   * Dial peers' direct addresses on private networks and loopback too (`--p2p-allow-private`): devnets, tests, a
   * LAN of one's own. Refused by default: an announcement must not aim us at hosts of our own network.
   */
  allowPrivateDirect?: boolean
  /**
   * The certificate (its chain after it) and private key, in PEM, that `listen`'s `/wss` addresses serve WebSockets
   * Secure with (`--p2p-tls-cert`, `--p2p-tls-key`): pages served over HTTPS dial only those.
   */
  listenTls?: { cert: string; key: string }
  /** A direct dial gives up after this long and the circuit is dialled (default 2 s). */
  directDialTimeoutMs?: number
  /** The first pause after a failed direct dial or a lost direct connection, doubling to 5 min (default 10 s). */
  directRetryMs?: number
  /** How often a direct connection is checked; it is given up when an answer takes half of it (default 5 s). */
  directCheckMs?: number
  /**
   * Whether a DNS name resolves to a private address (Node hosts pass the system resolver's answer): a direct
   * address by such a name is not dialled unless `allowPrivateDirect`.
   */
  resolvesPrivate?: (host: string) => Promise<boolean>
  /** What one peer may send us over its message streams before it is held back (docs/decisions/0064). */
  inboundLimits?: InboundLimits
  /** Told about relay and presence changes and dropped input: for logs and metrics. */
  log?: (event: Libp2pTransportLogEvent) => void
  /**
   * libp2p's WebRTC transport (`webRTC()` of @libp2p/webrtc), where the host has WebRTC (a page, through its bridge:
   * worker/remoteRtc.ts): the node listens on `/webrtc` too and announces those addresses, and its messages to a peer
   * that announces one move to a direct connection once it is up; the relay stays the way meanwhile and after
   * (directConnections.ts, docs/decisions/0065).
   */
  webRTC?: NonNullable<Libp2pOptions['transports']>[number]
}

export type Libp2pTransportLogEvent =
  | { type: 'relayConnected'; relay: string }
  | { type: 'relayLost'; relay: string; error?: unknown }
  | { type: 'relayBack'; relay: string }
  | { type: 'reserved'; addresses: string[] }
  | { type: 'noReservation'; afterMs: number }
  | { type: 'announced'; addresses: string[] }
  | PeerSeenEvent
  | { type: 'invalidFrame'; from: Address }
  | { type: 'oversizedFrame'; from: Address }
  | { type: 'streamFailed'; peer?: Address; error: unknown }
  | DirectPathsLogEvent
  | DirectConnectionsLogEvent

export type Libp2pTransport = Omit<Transport, 'stats'> & {
  /** This node's PeerId (`16Uiu2H…`), a function of its key. */
  readonly peerId: string
  /** Where other nodes can dial this one now: its circuit addresses on the relays, then its direct addresses. */
  addresses(): string[]
  stats(): Libp2pTransportStats
  /**
   * Asks the relays about `peer` and keeps what they say (its record, and when it leaves), without opening any way to
   * it: for a service that follows whether thousands of nodes are online (a pathfinding service), where `connect`
   * would open a stream to each.
   */
  watch(peer: Address): void
  /**
   * The newest signed presence record of a watched peer while one of our relays keeps a fresh one, so the peer is
   * online there; undefined otherwise (docs/decisions/0072).
   */
  presence(peer: Address): PresenceRecord | undefined
}

export type Libp2pTransportStats = InboundCounters & {
  /** Peers we can address (announced, or connected to us). */
  knownPeers: number
  /** Outbound message streams opened since start: one per peer unless one broke. */
  streamsOpened: number
  /** Message streams from peers open now. */
  inboundStreams: number
  framesSent: number
  /** Presence announcements received (a relay's records, or the gossipsub topic's), ours and stale ones included. */
  announcementsReceived: number
  /** Peers with a direct connection (not through a relay) open now. */
  directPeers: number
  /** Direct WebRTC connections open now; 0 without WebRTC. */
  directConnections: number
}

function checkRuntime() {
  if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') throw new MissingRuntimeFeatureError('Promise.withResolvers')
  if (typeof globalThis.WebSocket !== 'function') throw new MissingRuntimeFeatureError('globalThis.WebSocket')
}

/**
 * Carries wire lines between nodes over libp2p (docs/transport.md): WebSockets to our relays, circuit relay v2 to
 * reach peers by PeerId, Noise and yamux. Each peer gets one outbound stream of `/sluice/msg/1.0.0`, reused
 * for every batch and reopened when it breaks; a batch is one or more length-prefixed JSON frames.
 *
 * Peers are found by presence: every node puts its signed record (its circuit addresses, and its direct ones if it
 * listens) in each relay's registry, and watches the addresses it wants to hear of (those it connects to, sends to,
 * or that connected to it); the relay hands it their records, now and on each change. The signature is the PeerId
 * key's, so the announcer's address is authenticated. Sends to a peer we know nothing about reject at once (and ask
 * the relays for it), sends to an offline one within milliseconds (the relay has no reservation for it): the
 * delivery layer retries, and resends when `onPeerSeen` reports the peer (a record, or an inbound connection).
 *
 * The parts, each in its module: the libp2p configuration (`libp2pOptions.ts`), the relay keeper
 * (`relayKeeper.ts`), the peer directory (`peerDirectory.ts`), the announcer (`announcer.ts`), the presence links to
 * the relays (`presenceLinks.ts`), the direct paths (`directPaths.ts`), with WebRTC the direct connections
 * (`directConnections.ts`), and the outbound and inbound streams (`outboundStreams.ts`, `inboundStreams.ts`); here
 * they are wired to one libp2p node.
 *
 * Runs in browsers (page and worker) and in Node; Node 20 needs nodePolyfills.ts imported first.
 */
export function createLibp2pTransport(parameters: Libp2pTransportParameters): Libp2pTransport {
  const { log } = parameters
  const topic = parameters.presenceTopic ?? defaultPresenceTopic
  const dialTimeoutMs = parameters.dialTimeoutMs ?? 5_000
  const startTimeoutMs = parameters.startTimeoutMs ?? 10_000
  const privateKey = libp2pPrivateKey(parameters.privateKey)
  const ownPeerId = peerIdOfKey(parameters.privateKey)
  const relays = parameters.relays.map(parseRelay)

  let node: Libp2p<Services> | undefined
  /** The start in progress or done; cleared by stop, so that the transport can start again. */
  let starting: Promise<void> | undefined
  let running = false
  let onMessages: (lines: string[], from: Address) => unknown = () => undefined
  const inbound = new InboundStreams({
    deliver: (lines, from) => onMessages(lines, from),
    running: () => running,
    ...(parameters.inboundLimits ? { limits: parameters.inboundLimits } : {}),
    ...(log ? { log } : {}),
  })
  let announcementsReceived = 0

  const listen = parameters.listen ?? []
  const announce = parameters.announce ?? []
  const allowPrivateDirect = parameters.allowPrivateDirect ?? false

  const directory = new PeerDirectory({ me: addressOfPeer(ownPeerId)!, relays, allowPrivateDirect, ...(log ? { log } : {}) })
  const keeper = new RelayKeeper({
    relays,
    dialTimeoutMs,
    // Back on a relay after losing it (a relay restart, a link cut): every peer may be reachable again from here, so
    // what waits for them goes now, not at its backoff timer (up to a minute away after a long cut).
    onRelayBack: (relay) => {
      log?.({ type: 'relayBack', relay: relay.addr.toString() })
      if (running) directory.reportAll()
    },
    ...(log ? { log } : {}),
  })
  /** This node's direct addresses: the announced ones, else what its sockets listen on; each with /p2p/<our id>. */
  const directAddresses = (): string[] => {
    if (!node || listen.length === 0) return []
    const own = `/p2p/${ownPeerId}`
    if (announce.length > 0) return announce.map((a) => `${a}${own}`)
    return node.services.sockets
      .addresses()
      .filter((a) => !a.includes('/p2p-circuit'))
      .map((a) => `${a}${own}`)
  }
  const addresses = () => [...keeper.circuitAddresses(), ...directAddresses()].slice(0, maxAddresses)

  /**
   * Presence through the relays' registries: our record to each, the addresses we want to hear of, their records
   * back. A relay without one (older) makes us listen to the gossipsub topic too (`legacy`).
   */
  let legacy = false
  const book = new PresenceBook()
  const links = new PresenceLinks({
    relays,
    open: (relay, signal) => node!.dialProtocol(relay, presenceProtocol, { signal }),
    onRecord: (peerId, data, record, relay) => {
      announcementsReceived++
      const address = addressOfPeer(peerId)
      const announcement = readAnnouncement(data)
      if (address && announcement) book.put(address, relay.peerId.toString(), record, announcement.ts)
      void learn(directory.announced(peerId, data))
    },
    onGone: (address, relay) => book.gone(address, relay.peerId.toString()),
    onLinkLost: (relay) => book.lost(relay.peerId.toString()),
    onLegacyRelay: () => {
      if (legacy || !node) return
      legacy = true
      node.services.pubsub.subscribe(topic)
    },
    timeoutMs: dialTimeoutMs,
    ...(log ? { log } : {}),
  })
  const announcer = new Announcer({
    // Our signed record to the relays' registries, and the same announcement on the gossipsub topic, where nodes
    // from before the registries look for us (we publish there without listening, unless a relay has no registry).
    publish: async (announcement) => {
      links.put(await signRecord(privateKey, ownPeerId.toString(), announcement))
      await node!.services.pubsub.publish(topic, encodeAnnouncement(announcement))
    },
    addresses,
    intervalMs: parameters.announceIntervalMs ?? 240_000,
    ...(log ? { log } : {}),
  })
  const direct = new DirectPaths({
    isRelay: (peer) => directory.isRelay(peer),
    allowPrivate: allowPrivateDirect,
    dialTimeoutMs: parameters.directDialTimeoutMs ?? 2_000,
    retryMs: parameters.directRetryMs ?? 10_000,
    maxRetryMs: 300_000,
    pingMs: parameters.directCheckMs ?? 5_000,
    pingTimeoutMs: (parameters.directCheckMs ?? 5_000) / 2,
    ...(parameters.resolvesPrivate ? { resolvesPrivate: parameters.resolvesPrivate } : {}),
    onChange: (peer, up) => {
      if (!running) return
      const address = addressOfPeer(peer)
      if (!address) return
      // Up: the next batch goes over the direct connection, and the circuit closes once our stream on it did (the
      // peer does the same on its side): the relay carries nothing more for this pair. Down: what waits for the
      // peer goes now, through a relay.
      if (up) void streams.retire(address).then(() => closeRelayed(peer))
      else directory.again(peer)
    },
    ...(log ? { log } : {}),
  })
  /** Closes our connections to `peer` through a relay, once a direct one carries its messages. */
  const closeRelayed = (peer: PeerId) => {
    if (!node || !direct.connection(peer)) return
    // A WebRTC connection's address names the relay that signalled it: it is direct all the same.
    for (const connection of node.getConnections(peer))
      if (isCircuit(connection.remoteAddr) && !isWebRtc(connection.remoteAddr))
        void connection
          .close({ signal: AbortSignal.timeout(dialTimeoutMs) })
          .catch(() => connection.abort(new TransportError('replaced by a direct connection')))
  }
  /**
   * A message stream to a peer: over its direct connection, or a new one to its direct addresses (bounded), else
   * through a relay (libp2p's dial by PeerId, which the gater keeps to the circuits in the peer store).
   */
  const openStream = async (peerId: PeerId, signal: AbortSignal): Promise<Stream> => {
    const connection = await direct.dial(peerId, signal)
    if (connection) return connection.newStream(messageProtocol, { signal, runOnLimitedConnection: true })
    return node!.dialProtocol(peerId, messageProtocol, { signal, runOnLimitedConnection: true })
  }
  const streams = new OutboundStreams({
    dial: openStream,
    lookup: (peer) => (running && node ? directory.peerId(peer) : undefined),
    dialTimeoutMs,
    sendTimeoutMs: parameters.sendTimeoutMs ?? 10_000,
    ...(log ? { log } : {}),
  })

  // WebRTC, when the host has it: a direct connection up moves a peer's next batch to it (a new stream, which libp2p
  // opens on the direct connection); its last one closed makes what waits for the peer due at once, through the relay.
  const rtc = parameters.webRTC
    ? createDirectConnections({
        self: ownPeerId,
        onChange: (peerId, up) => {
          const identity = identityOfPeer(peerId)
          if (!identity || !running) return
          if (up) void streams.retire(identity.address)
          else directory.again(peerId)
        },
        ...(log ? { log } : {}),
      })
    : undefined

  /** A peer heard of: where to dial it goes into the peer store first (delivery dials it at once), then it is reported. */
  const learn = async (heard: Heard | undefined) => {
    if (!heard) return
    // Whoever we know of, we want to hear of again: its restart, its new addresses.
    links.watch(heard.address)
    if (heard.addrs.length > 0) await node?.peerStore.merge(heard.peerId, { multiaddrs: heard.addrs }).catch(() => {})
    if (heard.webrtcAddrs) rtc?.noteAddresses(heard.peerId, heard.webrtcAddrs)
    if (heard.how === 'presence') {
      direct.note(heard.peerId, heard.direct, heard.newSession)
      // Already talking to it through a relay (it was known from its connection first): try its direct path now.
      if (streams.has(heard.address)) direct.talking(heard.peerId)
    }
    if (!running) return
    // On the gossipsub topic, a newcomer (or a peer back from a restart) does not know us yet: tell it, so it can send
    // what it holds for us. A registry hands our record to whoever watches us, newcomers too.
    if (heard.newSession && legacy) announcer.soon()
    if (directory.report(heard)) streams.warm(heard.address)
  }

  const onPresence = (msg: PubsubMessage) => {
    if (msg.topic !== topic || msg.type !== 'signed') return
    announcementsReceived++
    void learn(directory.announced(msg.from, msg.data))
  }

  const onConnection = (connection: Connection) => void learn(directory.connected(connection.remotePeer, connection.direction))

  const startNode = async (receive: typeof onMessages) => {
    checkRuntime()
    onMessages = receive
    const started = Date.now()
    const webrtc = rtc && parameters.webRTC ? { transport: parameters.webRTC, listen: rtc.listen, deniesDial: rtc.deniesDial } : undefined
    const created = await createLibp2p<Services>(
      libp2pOptions(privateKey, relays, { webrtc, direct: { listen, paths: direct, ...(parameters.listenTls ? { tls: parameters.listenTls } : {}) } }),
    )
    node = created
    running = true
    direct.attach(created)
    rtc?.attach(created)
    announcer.start()
    // A peer needs one stream; a few more cover one it opens again before libp2p noticed the last one gone.
    await created.handle(messageProtocol, inbound.handle, { runOnLimitedConnection: true, maxInboundStreams: 8 })
    created.addEventListener('connection:open', (e) => onConnection(e.detail))
    // A new reservation (after a relay restart, say) changes where we can be reached: say so.
    created.addEventListener('self:peer:update', () => {
      if (addresses().length > 0) announcer.soon()
    })
    const pubsub = created.services.pubsub
    pubsub.topicValidators.set(topic, (_peer, msg) =>
      msg.type === 'signed' && addressOfPeer(msg.from) && readAnnouncement(msg.data) ? TopicValidatorResult.Accept : TopicValidatorResult.Reject,
    )
    pubsub.addEventListener('message', (e) => onPresence(e.detail))
    // A relay (the hub) joining the topic is when an announcement can first reach anyone.
    pubsub.addEventListener('subscription-change', (e) => {
      if (directory.isRelay(e.detail.peerId) && e.detail.subscriptions.some((s) => s.topic === topic && s.subscribe)) announcer.soon()
    })
    await created.start()
    links.start(created)
    await keeper.start(created)
    if (relays.length > 0) {
      const reserved = await keeper.waitForReservation(startTimeoutMs)
      if (reserved) log?.({ type: 'reserved', addresses: addresses() })
      else log?.({ type: 'noReservation', afterMs: Date.now() - started })
    }
    announcer.soon()
  }

  return {
    peerId: ownPeerId.toString(),

    addresses,

    stats: () => ({
      knownPeers: directory.size,
      inboundStreams: inbound.size,
      announcementsReceived,
      ...streams.counters,
      ...inbound.counters,
      directPeers: direct.count(),
      directConnections: rtc?.count() ?? 0,
    }),

    start(receive) {
      if (starting) return Promise.reject(new TransportError('transport already started'))
      const attempt = startNode(receive)
      starting = attempt
      attempt.catch(() => {
        if (starting === attempt && !node) starting = undefined
      })
      return attempt
    },

    async send(to, lines) {
      if (!running || !node) throw new TransportClosedError('send')
      if (lines.length === 0) return
      const peerId = directory.peerId(to)
      if (!peerId) {
        // Asked of the relays now: delivery sends again when the peer is seen.
        links.watch(to)
        throw new PeerUnknownError(to)
      }
      direct.talking(peerId)
      rtc?.talkingTo(peerId)
      return streams.send(to, encodeFrames(lines))
    },

    onPeerSeen(listener) {
      directory.onSeen(listener)
    },

    watch(peer) {
      if (peer.toLowerCase() !== addressOfPeer(ownPeerId)!.toLowerCase()) links.watch(peer)
    },

    presence: (peer) => book.online(peer),

    async peerRecord(peer, record, options) {
      const opened = await openAddressMetadata(peer, record)
      if (!opened.ok) return opened
      // As a relay's record, judged by the directory (ours, off our clock, or not newer than the one held: ignored),
      // but never counted as the relays saying the peer is online (the presence book is theirs).
      if (options?.take && running) {
        announcementsReceived++
        await learn(directory.announced(opened.peerId, opened.data))
      }
      return { ok: true, publicKey: opened.publicKey }
    },

    connect(peer) {
      // Asked of the relays whether known or not (said on each presence stream, also one opened later).
      if (peer.toLowerCase() !== addressOfPeer(ownPeerId)!.toLowerCase()) links.watch(peer)
      if (directory.want(peer)) streams.warm(peer)
    },

    async stop() {
      const pending = starting
      if (!pending) return
      // A stop during start waits for it (at most startTimeoutMs), then undoes it.
      await pending.catch(() => {})
      starting = undefined
      if (!node) return
      running = false
      announcer.stop()
      links.stop()
      legacy = false
      direct.stop()
      rtc?.stop()
      await keeper.stop()
      inbound.closeAll()
      streams.closeAll()
      const stopping = node
      node = undefined
      await stopping.stop()
      directory.clear()
      book.clear()
    },
  }
}
