import { TopicValidatorResult, type Message as PubsubMessage } from '@libp2p/gossipsub'
import type { Connection } from '@libp2p/interface'
import { createLibp2p, type Libp2p, type Libp2pOptions } from 'libp2p'
import type { Address, Hex } from 'viem'
import { MissingRuntimeFeatureError, PeerUnknownError, TransportClosedError, TransportError } from '../errors.ts'
import type { Transport } from '../transport.ts'
import { Announcer } from './announcer.ts'
import { createDirectConnections, type DirectConnectionsLogEvent } from './directConnections.ts'
import { encodeFrames } from './frames.ts'
import { InboundStreams, type InboundCounters, type InboundLimits } from './inboundStreams.ts'
import { libp2pOptions, type Services } from './libp2pOptions.ts'
import { OutboundStreams } from './outboundStreams.ts'
import { PeerDirectory, type Heard } from './peerDirectory.ts'
import { addressOfPeer, identityOfPeer, libp2pPrivateKey, peerIdOfKey } from './peerIdentity.ts'
import { readAnnouncement } from './presence.ts'
import { messageProtocol, presenceTopic as defaultPresenceTopic } from './protocol.ts'
import { parseRelay } from './relayAddress.ts'
import { RelayKeeper } from './relayKeeper.ts'

export type Libp2pTransportParameters = {
  /** The node's Ethereum private key: it is also its libp2p identity (secp256k1). */
  privateKey: Hex
  /** Relay multiaddrs, each ending in /p2p/<relay peer id> (what `sluice relay` prints). */
  relays: readonly string[]
  /** The gossipsub topic of presence announcements (default `sluice/presence/1`). */
  presenceTopic?: string
  /** Milliseconds between presence announcements (default 30 s); also sent on start and when answering a newcomer. */
  announceIntervalMs?: number
  /** Give up opening a stream to a peer after this long (default 5 s). */
  dialTimeoutMs?: number
  /** Give up writing a batch to an open stream after this long (default 10 s). */
  sendTimeoutMs?: number
  /** `start` waits this long for a relay reservation, then resolves anyway and keeps trying (default 10 s). */
  startTimeoutMs?: number
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
  | { type: 'peerSeen'; peer: Address; how: 'presence' | 'connection' }
  | { type: 'invalidFrame'; from: Address }
  | { type: 'oversizedFrame'; from: Address }
  | { type: 'streamFailed'; peer?: Address; error: unknown }
  | DirectConnectionsLogEvent

export type Libp2pTransport = Omit<Transport, 'stats'> & {
  /** This node's PeerId (`16Uiu2H…`), a function of its key. */
  readonly peerId: string
  /** Where other nodes can dial this one now: its circuit addresses on the relays. */
  addresses(): string[]
  stats(): Libp2pTransportStats
}

export type Libp2pTransportStats = InboundCounters & {
  /** Peers we can address (announced, or connected to us). */
  knownPeers: number
  /** Outbound message streams opened since start: one per peer unless one broke. */
  streamsOpened: number
  /** Message streams from peers open now. */
  inboundStreams: number
  framesSent: number
  /** Direct (WebRTC) connections open now; 0 without WebRTC. */
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
 * Peers are found by presence: every node announces its circuit addresses on a gossipsub topic that the relays
 * join; the announcement is signed with the PeerId key, so its sender's address is authenticated. A node that
 * connects to us is also known from then on. Sends to a peer we know nothing about reject at once, sends to an
 * offline one within milliseconds (the relay has no reservation for it): the delivery layer retries, and resends
 * when `onPeerSeen` reports the peer (an announcement, or an inbound connection).
 *
 * The parts, each in its module: the libp2p configuration (`libp2pOptions.ts`), the relay keeper
 * (`relayKeeper.ts`), the peer directory (`peerDirectory.ts`), the announcer (`announcer.ts`) and the outbound
 * streams (`outboundStreams.ts`), and with WebRTC the direct connections (`directConnections.ts`); here they are
 * wired to one libp2p node, with the inbound streams.
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

  const directory = new PeerDirectory({ me: addressOfPeer(ownPeerId)!, relays, ...(log ? { log } : {}) })
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
  const announcer = new Announcer({
    publish: (data) => node!.services.pubsub.publish(topic, data),
    addresses: () => keeper.circuitAddresses(),
    intervalMs: parameters.announceIntervalMs ?? 30_000,
    ...(log ? { log } : {}),
  })
  const streams = new OutboundStreams({
    dial: (peerId, signal) => node!.dialProtocol(peerId, messageProtocol, { signal, runOnLimitedConnection: true }),
    lookup: (peer) => (running && node ? directory.peerId(peer) : undefined),
    dialTimeoutMs,
    sendTimeoutMs: parameters.sendTimeoutMs ?? 10_000,
    ...(log ? { log } : {}),
  })

  // WebRTC, when the host has it: a direct connection up moves a peer's next batch to it (a new stream, which libp2p
  // opens on the direct connection); its last one closed makes what waits for the peer due at once, through the relay.
  const direct = parameters.webRTC
    ? createDirectConnections({
        self: ownPeerId,
        onChange: (peerId, up) => {
          const identity = identityOfPeer(peerId)
          if (!identity || !running) return
          if (up) streams.retire(identity.address)
          else void learn({ ...identity, peerId, how: 'connection', addrs: [], newSession: false })
        },
        ...(log ? { log } : {}),
      })
    : undefined

  /** A peer heard of: where to dial it goes into the peer store first (delivery dials it at once), then it is reported. */
  const learn = async (heard: Heard | undefined) => {
    if (!heard) return
    if (heard.webrtcAddrs) direct?.noteAddresses(heard.peerId, heard.webrtcAddrs)
    if (heard.addrs.length > 0) await node?.peerStore.merge(heard.peerId, { multiaddrs: heard.addrs }).catch(() => {})
    if (!running) return
    // A newcomer (or a peer back from a restart) does not know us yet: tell it, so it can send what it holds for us.
    if (heard.newSession) announcer.soon()
    if (directory.report(heard)) streams.warm(heard.address)
  }

  const onPresence = (msg: PubsubMessage) => {
    if (msg.topic !== topic || msg.type !== 'signed') return
    void learn(directory.announced(msg.from, msg.data))
  }

  const onConnection = (connection: Connection) => void learn(directory.connected(connection.remotePeer, connection.direction))

  const startNode = async (receive: typeof onMessages) => {
    checkRuntime()
    onMessages = receive
    const started = Date.now()
    const created = await createLibp2p<Services>(
      libp2pOptions(
        privateKey,
        relays,
        direct && parameters.webRTC ? { transport: parameters.webRTC, listen: direct.listen, deniesDial: direct.deniesDial } : undefined,
      ),
    )
    node = created
    running = true
    direct?.attach(created)
    announcer.start()
    // A peer needs one stream; a few more cover one it opens again before libp2p noticed the last one gone.
    await created.handle(messageProtocol, inbound.handle, { runOnLimitedConnection: true, maxInboundStreams: 8 })
    created.addEventListener('connection:open', (e) => onConnection(e.detail))
    // A new reservation (after a relay restart, say) changes where we can be reached: say so.
    created.addEventListener('self:peer:update', () => {
      if (keeper.circuitAddresses().length > 0) announcer.soon()
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
    pubsub.subscribe(topic)
    await keeper.start(created)
    if (relays.length > 0) {
      const reserved = await keeper.waitForReservation(startTimeoutMs)
      if (reserved) log?.({ type: 'reserved', addresses: keeper.circuitAddresses() })
      else log?.({ type: 'noReservation', afterMs: Date.now() - started })
    }
    announcer.soon()
  }

  return {
    peerId: ownPeerId.toString(),

    addresses: () => keeper.circuitAddresses(),

    stats: () => ({
      knownPeers: directory.size,
      inboundStreams: inbound.size,
      ...streams.counters,
      ...inbound.counters,
      directConnections: direct?.count() ?? 0,
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
      if (!peerId) throw new PeerUnknownError(to)
      direct?.talkingTo(peerId)
      return streams.send(to, encodeFrames(lines))
    },

    onPeerSeen(listener) {
      directory.onSeen(listener)
    },

    connect(peer) {
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
      direct?.stop()
      announcer.stop()
      await keeper.stop()
      inbound.closeAll()
      streams.closeAll()
      const stopping = node
      node = undefined
      await stopping.stop()
      directory.clear()
    },
  }
}
