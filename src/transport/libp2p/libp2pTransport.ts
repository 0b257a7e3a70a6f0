import { circuitRelayTransport } from '@libp2p/circuit-relay-v2'
import { gossipsub, TopicValidatorResult, type GossipSub, type Message as PubsubMessage } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Connection, PeerId, Stream } from '@libp2p/interface'
import { noise } from '@libp2p/noise'
import { peerIdFromString } from '@libp2p/peer-id'
import { isPrivate, lpStream, type LengthPrefixedStream } from '@libp2p/utils'
import { webSockets } from '@libp2p/websockets'
import { yamuxMuxer } from './yamuxMuxer.ts'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2p, type Libp2pOptions } from 'libp2p'
import type { Address, Hex } from 'viem'
import {
  InvalidRelayAddressError,
  MissingRuntimeFeatureError,
  PeerUnknownError,
  PeerUnreachableError,
  TransportClosedError,
  TransportError,
} from '../errors.ts'
import type { Transport } from '../transport.ts'
import { createDirectConnections, isWebRtc, type DirectConnectionsLogEvent } from './directConnections.ts'
import { decodeFrame, encodeFrames, maxFrameBytes } from './frames.ts'
import { addressOfPeer, identityOfPeer, libp2pPrivateKey, peerIdOfKey } from './peerIdentity.ts'
import { encodeAnnouncement, maxClockSkewMs, readAnnouncement } from './presence.ts'
import { messageProtocol, presenceTopic as defaultPresenceTopic } from './protocol.ts'

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
  /** Told about relay and presence changes and dropped input: for logs and metrics. */
  log?: (event: Libp2pTransportLogEvent) => void
  /**
   * libp2p's WebRTC transport (`webRTC()` of @libp2p/webrtc), where the host has WebRTC (a page, through its bridge:
   * worker/remoteRtc.ts): the node listens on `/webrtc` too and announces those addresses, and its messages to a peer
   * that announces one move to a direct connection once it is up; the relay stays the way meanwhile and after
   * (directConnections.ts, docs/decisions/0061).
   */
  webRTC?: NonNullable<Libp2pOptions['transports']>[number]
}

export type Libp2pTransportLogEvent =
  | { type: 'relayConnected'; relay: string }
  | { type: 'relayLost'; relay: string; error?: unknown }
  | { type: 'reserved'; addresses: string[] }
  | { type: 'noReservation'; afterMs: number }
  | { type: 'announced'; addresses: string[] }
  | { type: 'peerSeen'; peer: Address; how: 'presence' | 'connection' }
  | { type: 'invalidFrame'; from: Address }
  | { type: 'streamFailed'; peer?: Address; error: unknown }
  | DirectConnectionsLogEvent

export type Libp2pTransport = Transport & {
  /** This node's PeerId (`16Uiu2H…`), a function of its key. */
  readonly peerId: string
  /** Where other nodes can dial this one now: its circuit addresses on the relays. */
  addresses(): string[]
  stats(): Libp2pTransportStats
}

export type Libp2pTransportStats = {
  /** Peers we can address (announced, or connected to us). */
  knownPeers: number
  /** Outbound message streams opened since start: one per peer unless one broke. */
  streamsOpened: number
  /** Message streams from peers open now. */
  inboundStreams: number
  framesSent: number
  framesReceived: number
  /** Direct (WebRTC) connections open now; 0 without WebRTC. */
  directConnections: number
}

type Services = { identify: unknown; pubsub: GossipSub }

/** A peer we know how to reach: from its presence announcement, or from a connection it opened to us. */
type KnownPeer = { peerId: PeerId; session?: string; ts: number }

type Outbound = { stream: Stream; lp: LengthPrefixedStream<Stream> }

const isCircuit = (ma: Multiaddr) => ma.toString().includes('/p2p-circuit')
const withoutPeerId = (ma: Multiaddr) => ma.toString().replace(/\/p2p\/[^/]+$/, '')
const randomId = () => Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, '0')).join('')

function parseRelay(address: string): { addr: Multiaddr; peerId: PeerId } {
  let addr: Multiaddr
  try {
    addr = multiaddr(address)
  } catch (error) {
    throw new InvalidRelayAddressError(address, `is not a multiaddr (${(error as Error).message})`)
  }
  const id = addr
    .getComponents()
    .filter((c) => c.name === 'p2p')
    .pop()?.value
  if (!id) throw new InvalidRelayAddressError(address, 'has no /p2p/<relay peer id>')
  return { addr, peerId: peerIdFromString(id) }
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
 * Runs in browsers (page and worker) and in Node; Node 20 needs nodePolyfills.ts imported first.
 */
export function createLibp2pTransport(parameters: Libp2pTransportParameters): Libp2pTransport {
  const { log } = parameters
  const topic = parameters.presenceTopic ?? defaultPresenceTopic
  const announceIntervalMs = parameters.announceIntervalMs ?? 30_000
  const dialTimeoutMs = parameters.dialTimeoutMs ?? 5_000
  const sendTimeoutMs = parameters.sendTimeoutMs ?? 10_000
  const startTimeoutMs = parameters.startTimeoutMs ?? 10_000
  const privateKey = libp2pPrivateKey(parameters.privateKey)
  const ownPeerId = peerIdOfKey(parameters.privateKey)
  const me = addressOfPeer(ownPeerId)!.toLowerCase()
  const relays = parameters.relays.map(parseRelay)
  const relayIds = new Set(relays.map((r) => r.peerId.toString()))
  const relayAddrs = new Set(relays.map((r) => withoutPeerId(r.addr)))
  let session = randomId()

  const peerListeners: ((peer: Address, publicKey?: Hex) => void)[] = []
  /** Known peers by lowercase address. */
  const peers = new Map<string, KnownPeer>()
  /** Peers to open a stream to as soon as they are known (`connect` before they were seen); lowercase addresses. */
  const wanted = new Set<string>()
  /** The outbound stream to each peer (lowercase address), open or being opened. */
  const outbound = new Map<string, Promise<Outbound>>()
  /** Per peer, the send in progress: batches to one peer go out in order. */
  const sending = new Map<string, Promise<void>>()
  const inbound = new Set<Stream>()
  const relayRetry = new Map<string, { timer?: ReturnType<typeof setTimeout>; dialing?: boolean; delay: number }>()

  let node: Libp2p<Services> | undefined
  /** The start in progress or done; cleared by stop, so that the transport can start again. */
  let starting: Promise<void> | undefined
  let running = false
  let announceTimer: ReturnType<typeof setInterval> | undefined
  let answerTimer: ReturnType<typeof setTimeout> | undefined
  let onMessages: (lines: string[], from: Address) => void = () => {}
  const counters = { streamsOpened: 0, framesSent: 0, framesReceived: 0 }
  // WebRTC, when the host has it: a direct connection up moves a peer's next batch to it (a new stream, which libp2p
  // opens on the direct connection); its last one closed makes what waits for the peer due at once, through the relay.
  const direct = parameters.webRTC
    ? createDirectConnections({
        self: ownPeerId,
        ...(log ? { log } : {}),
        onChange: (peer, up) => {
          const identity = identityOfPeer(peer)
          if (!identity || !running) return
          if (up) retireOutbound(identity.address.toLowerCase())
          else seen(identity.address, 'connection', identity.publicKey)
        },
      })
    : undefined

  const seen = (peer: Address, how: 'presence' | 'connection', publicKey: Hex | undefined) => {
    log?.({ type: 'peerSeen', peer, how })
    const key = peer.toLowerCase()
    if (wanted.delete(key)) warm(key)
    for (const listener of peerListeners) {
      try {
        listener(peer, publicKey)
      } catch {
        // A listener's failure is its own; the others still hear of the peer.
      }
    }
  }

  const circuitAddresses = () => (node ? node.getMultiaddrs().filter(isCircuit).map(String) : [])

  const announce = () => {
    if (!running || !node) return
    const addrs = circuitAddresses()
    if (addrs.length === 0) return // not reachable yet: announcing would only make peers dial in vain
    node.services.pubsub.publish(topic, encodeAnnouncement({ v: 1, session, addrs, ts: Date.now() })).then(
      () => log?.({ type: 'announced', addresses: addrs }),
      (error) => log?.({ type: 'streamFailed', error }),
    )
  }

  /** Announce soon, once for a burst of reasons (several newcomers, a new reservation and a new subscriber). */
  const announceSoon = () => {
    if (answerTimer !== undefined || !running) return
    answerTimer = setTimeout(
      () => {
        answerTimer = undefined
        announce()
      },
      20 + Math.random() * 80,
    )
  }

  const onPresence = async (msg: PubsubMessage) => {
    if (msg.topic !== topic || msg.type !== 'signed') return
    const identity = identityOfPeer(msg.from)
    const address = identity?.address
    if (!address || address.toLowerCase() === me) return
    const announcement = readAnnouncement(msg.data)
    if (!announcement || Math.abs(announcement.ts - Date.now()) > maxClockSkewMs) return
    const key = address.toLowerCase()
    const known = peers.get(key)
    if (known && announcement.ts <= known.ts) return // a late copy or a replay of an older announcement
    peers.set(key, { peerId: msg.from, session: announcement.session, ts: announcement.ts })
    // Only circuit addresses that end at the announcer itself: an announcement must not make us dial anything else.
    const addrs = announcement.addrs.flatMap((a) => {
      try {
        const ma = multiaddr(a)
        return isCircuit(ma) && ma.toString().endsWith(`/p2p-circuit/p2p/${msg.from}`) ? [ma] : []
      } catch {
        return []
      }
    })
    // And its WebRTC addresses, signalled through a relay to the announcer, for the direct connections alone.
    direct?.noteAddresses(
      msg.from,
      announcement.addrs.flatMap((a) => {
        try {
          const ma = multiaddr(a)
          return isWebRtc(ma) && ma.toString().endsWith(`/p2p-circuit/webrtc/p2p/${msg.from}`) ? [ma] : []
        } catch {
          return []
        }
      }),
    )
    // Stored before the peer is reported: the delivery layer dials it at once.
    if (addrs.length > 0) await node?.peerStore.merge(msg.from, { multiaddrs: addrs }).catch(() => {})
    if (!running) return
    // A newcomer (or a peer back from a restart) does not know us yet: tell it, so it can send what it holds for us.
    if (known?.session !== announcement.session) announceSoon()
    seen(address, 'presence', identity.publicKey)
  }

  /** A peer that connects to us is online now, and reachable over that connection. */
  const onConnection = (connection: Connection) => {
    if (connection.direction !== 'inbound' || relayIds.has(connection.remotePeer.toString())) return
    const identity = identityOfPeer(connection.remotePeer)
    if (!identity) return
    const { address } = identity
    const key = address.toLowerCase()
    if (!peers.has(key)) {
      peers.set(key, { peerId: connection.remotePeer, ts: 0 })
      // Where to dial it once this connection is gone: through our relays, where it must hold a reservation.
      const circuits = relays.map((r) => multiaddr(`${r.addr}/p2p-circuit/p2p/${connection.remotePeer}`))
      void node?.peerStore.merge(connection.remotePeer, { multiaddrs: circuits }).catch(() => {})
    }
    seen(address, 'connection', identity.publicKey)
  }

  const handleInbound = async (stream: Stream, connection: Connection) => {
    const from = addressOfPeer(connection.remotePeer)
    if (!from || !running) {
      stream.abort(new TransportError('not a sluice peer'))
      return
    }
    inbound.add(stream)
    const lp = lpStream(stream, { maxDataLength: maxFrameBytes })
    try {
      for (;;) {
        const frame = await lp.read()
        const lines = decodeFrame(frame.subarray())
        counters.framesReceived++
        if (!lines) {
          log?.({ type: 'invalidFrame', from })
          stream.abort(new TransportError('invalid frame'))
          return
        }
        if (lines.length > 0 && running) onMessages(lines, from)
      }
    } catch {
      // The stream ended: the peer closed it, went away, or we are stopping. It opens a new one to send again.
    } finally {
      inbound.delete(stream)
    }
  }

  /** The next batch to the peer opens a new stream; this one closes once the batch being written is out. */
  const retireOutbound = (key: string) => {
    const opening = outbound.get(key)
    if (!opening) return
    outbound.delete(key)
    void (sending.get(key) ?? Promise.resolve())
      .catch(() => {})
      .then(() => opening)
      .then(({ stream }) => stream.close())
      .catch(() => {})
  }

  const dropOutbound = (key: string, opening: Promise<Outbound> | undefined) => {
    if (opening && outbound.get(key) === opening) outbound.delete(key)
    void opening?.then(({ stream }) => stream.abort(new TransportError('stream replaced'))).catch(() => {})
  }

  const openOutbound = (key: string, peer: KnownPeer): Promise<Outbound> => {
    const existing = outbound.get(key)
    if (existing) return existing
    const opening = (async () => {
      const stream = await node!.dialProtocol(peer.peerId, messageProtocol, { signal: AbortSignal.timeout(dialTimeoutMs), runOnLimitedConnection: true })
      counters.streamsOpened++
      stream.addEventListener('close', () => {
        if (outbound.get(key) === opening) outbound.delete(key)
      })
      return { stream, lp: lpStream(stream, { maxDataLength: maxFrameBytes }) }
    })()
    outbound.set(key, opening)
    opening.catch(() => {
      if (outbound.get(key) === opening) outbound.delete(key)
    })
    return opening
  }

  /** Opens the stream to a known peer ahead of a send; a failure is the next send's to find (it dials again). */
  const warm = (key: string) => {
    const peer = peers.get(key)
    if (!running || !peer || outbound.has(key)) return
    openOutbound(key, peer).catch((error: unknown) => log?.({ type: 'streamFailed', peer: key as Address, error }))
  }

  const deliver = async (to: Address, key: string, frames: Uint8Array[]) => {
    for (let attempt = 0; ; attempt++) {
      const peer = peers.get(key)
      if (!running || !peer) throw new TransportClosedError('send')
      const reused = outbound.has(key)
      const opening = openOutbound(key, peer)
      try {
        const { lp } = await opening
        const signal = AbortSignal.timeout(sendTimeoutMs)
        for (const frame of frames) {
          await lp.write(frame, { signal })
          counters.framesSent++
        }
        return
      } catch (error) {
        dropOutbound(key, opening)
        // A stream that was open before this send may sit on a connection that died unnoticed (the peer
        // restarted): one fresh dial is worth it. A failed fresh dial is the answer (the peer is offline).
        if (!reused || attempt > 0 || !running) {
          log?.({ type: 'streamFailed', peer: to, error })
          throw new PeerUnreachableError(to, error)
        }
      }
    }
  }

  const dialRelay = (relay: (typeof relays)[number]) => {
    const id = relay.peerId.toString()
    const state = relayRetry.get(id) ?? { delay: 250 }
    relayRetry.set(id, state)
    if (state.timer !== undefined || state.dialing || !running || !node) return
    const attempt = () => {
      state.timer = undefined
      if (!running || !node) return
      if (node.getConnections(relay.peerId).length > 0) return
      state.dialing = true
      node
        .dial(relay.addr, { signal: AbortSignal.timeout(dialTimeoutMs) })
        .finally(() => (state.dialing = false))
        .then(
          () => {
            state.delay = 250
            log?.({ type: 'relayConnected', relay: relay.addr.toString() })
          },
          (error) => {
            log?.({ type: 'relayLost', relay: relay.addr.toString(), error })
            // Keep trying, backing off to 10 s: the relay may be restarting.
            if (!running) return
            state.timer = setTimeout(attempt, state.delay)
            state.delay = Math.min(state.delay * 2, 10_000)
          },
        )
    }
    attempt()
  }

  /** Whether a reservation came within `startTimeoutMs` (polled: libp2p reports address changes up to a second late). */
  const waitForReservation = async (): Promise<boolean> => {
    const deadline = Date.now() + startTimeoutMs
    while (running && circuitAddresses().length === 0) {
      if (Date.now() > deadline) return false
      await new Promise((r) => setTimeout(r, 20))
    }
    return running
  }

  const startNode = async (receive: (lines: string[], from: Address) => void) => {
    checkRuntime()
    onMessages = receive
    session = randomId()
    const started = Date.now()
    const created = await createLibp2p<Services>({
      start: false,
      privateKey,
      // Listen on any relay we reserve on: the reservation store re-reserves whenever we reconnect to one.
      addresses: { listen: relays.length > 0 ? ['/p2p-circuit', ...(direct?.listen ?? [])] : [] },
      transports: [webSockets(), circuitRelayTransport(), ...(parameters.webRTC ? [parameters.webRTC] : [])],
      connectionEncrypters: [noise()],
      streamMuxers: [yamuxMuxer()],
      // Browsers refuse loopback and private addresses by default, which would rule out a local relay (dev,
      // tests). Our configured relays and circuits are always allowed; other private addresses (which a peer
      // could list in identify) are refused everywhere.
      // WebRTC addresses only when directConnections.ts dials them, never as libp2p's pick for a dial by PeerId.
      connectionGater: {
        denyDialMultiaddr: (ma) => direct?.deniesDial(ma) === true || (!relayAddrs.has(withoutPeerId(ma)) && !isCircuit(ma) && isPrivate(ma) === true),
      },
      services: {
        identify: identify(),
        pubsub: gossipsub({ allowPublishToZeroTopicPeers: true, runOnLimitedConnection: true, doPX: false }),
      },
    })
    node = created
    running = true
    direct?.attach(created)
    await created.handle(messageProtocol, handleInbound, { runOnLimitedConnection: true })
    created.addEventListener('connection:open', (e) => onConnection(e.detail))
    created.addEventListener('peer:disconnect', (e) => {
      const relay = relays.find((r) => r.peerId.equals(e.detail))
      if (relay && running) {
        log?.({ type: 'relayLost', relay: relay.addr.toString() })
        dialRelay(relay)
      }
    })
    // A new reservation (after a relay restart, say) changes where we can be reached: say so.
    created.addEventListener('self:peer:update', () => {
      if (circuitAddresses().length > 0) announceSoon()
    })
    const pubsub = created.services.pubsub
    pubsub.topicValidators.set(topic, (_peer, msg) =>
      msg.type === 'signed' && addressOfPeer(msg.from) && readAnnouncement(msg.data) ? TopicValidatorResult.Accept : TopicValidatorResult.Reject,
    )
    pubsub.addEventListener('message', (e) => void onPresence(e.detail))
    // A relay (the hub) joining the topic is when an announcement can first reach anyone.
    pubsub.addEventListener('subscription-change', (e) => {
      if (relayIds.has(e.detail.peerId.toString()) && e.detail.subscriptions.some((s) => s.topic === topic && s.subscribe)) announceSoon()
    })
    await created.start()
    pubsub.subscribe(topic)
    for (const relay of relays) dialRelay(relay)
    if (relays.length > 0) {
      const reserved = await waitForReservation()
      if (reserved) log?.({ type: 'reserved', addresses: circuitAddresses() })
      else log?.({ type: 'noReservation', afterMs: Date.now() - started })
    }
    announceSoon()
    announceTimer = setInterval(announce, announceIntervalMs)
  }

  return {
    peerId: ownPeerId.toString(),

    addresses: circuitAddresses,

    stats: () => ({ knownPeers: peers.size, inboundStreams: inbound.size, ...counters, directConnections: direct?.count() ?? 0 }),

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
      const key = to.toLowerCase()
      const known = peers.get(key)
      if (!known) throw new PeerUnknownError(to)
      direct?.talkingTo(known.peerId)
      const frames = encodeFrames(lines)
      const previous = sending.get(key) ?? Promise.resolve()
      const current = previous.catch(() => {}).then(() => deliver(to, key, frames))
      sending.set(key, current)
      current
        .finally(() => {
          if (sending.get(key) === current) sending.delete(key)
        })
        .catch(() => {})
      return current
    },

    onPeerSeen(listener) {
      peerListeners.push(listener)
    },

    connect(peer) {
      const key = peer.toLowerCase()
      if (key === me) return
      if (peers.has(key)) warm(key)
      else wanted.add(key)
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
      clearInterval(announceTimer)
      clearTimeout(answerTimer)
      for (const state of relayRetry.values()) clearTimeout(state.timer)
      relayRetry.clear()
      for (const stream of inbound) stream.abort(new TransportError('transport stopped'))
      for (const key of [...outbound.keys()]) dropOutbound(key, outbound.get(key))
      const stopping = node
      node = undefined
      await stopping.stop()
      peers.clear()
      sending.clear()
      wanted.clear()
    },
  }
}
