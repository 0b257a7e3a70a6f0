import type { PeerId } from '@libp2p/interface'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import type { Address, Hex } from 'viem'
import { isWebRtc } from './directConnections.ts'
import { directAddress } from './directPaths.ts'
import { identityOfPeer } from './peerIdentity.ts'
import { maxClockSkewMs, readAnnouncement } from './presence.ts'
import { circuitThrough, isCircuit, type RelayAddress } from './relayAddress.ts'

/** A peer we know how to reach: from its presence announcement, or from a connection it opened to us. */
type KnownPeer = { peerId: PeerId; session?: string; ts: number }

/** A peer reported seen: by a presence record (with the record's time) or by its connection to us. */
export type PeerSeenEvent = { type: 'peerSeen'; peer: Address; how: 'presence' | 'connection'; ts?: number }

/** A peer just heard of, authenticated by its PeerId (a signed announcement, or a Noise handshake). */
export type Heard = {
  address: Address
  /** 64 bytes, x || y: what a signature of it recovers. */
  publicKey: Hex
  peerId: PeerId
  how: 'presence' | 'connection'
  /** A presence record's time (its announcement's `ts`, ms): which record made it seen. */
  ts?: number
  /** Where to dial it, to store in libp2p's peer store before it is reported: circuits that end at it. */
  addrs: Multiaddr[]
  /** Its own direct addresses, dialled first (directPaths.ts): never in the peer store, so libp2p never picks one itself. */
  direct: Multiaddr[]
  /** It restarted, or we never heard of it: it does not know us yet, so we announce ourselves soon. */
  newSession: boolean
  /** Its WebRTC addresses, signalled through a relay to it (`<relay>/p2p-circuit/webrtc/p2p/<it>`), if it announced any. */
  webrtcAddrs?: Multiaddr[]
}

export type PeerDirectoryParameters = {
  /** This node's address: its own announcements are ignored. */
  me: Address
  /** Our relays: their connections are not peers, and a peer that connects to us is dialled back through them. */
  relays: readonly RelayAddress[]
  /** Keep announced direct addresses on private networks and loopback (devnets, tests); refused otherwise. */
  allowPrivateDirect?: boolean
  now?: () => number
  log?: (event: PeerSeenEvent) => void
}

/**
 * The peers a transport can address, by lowercase Ethereum address (docs/transport.md, Presence): those that
 * announced themselves on the presence topic, and those that connected to us. It reads announcements and
 * connections and says what each makes known; libp2p's peer store and the streams are the transport's.
 */
export class PeerDirectory {
  readonly #parameters: PeerDirectoryParameters
  readonly #me: string
  readonly #relayIds: Set<string>
  readonly #peers = new Map<string, KnownPeer>()
  /** Peers to open a stream to as soon as they are known (`connect` before they were seen). */
  readonly #wanted = new Set<string>()
  readonly #listeners: ((peer: Address, publicKey?: Hex) => void)[] = []

  constructor(parameters: PeerDirectoryParameters) {
    this.#parameters = parameters
    this.#me = parameters.me.toLowerCase()
    this.#relayIds = new Set(parameters.relays.map((r) => r.peerId.toString()))
  }

  get size(): number {
    return this.#peers.size
  }

  /** The PeerId of a known peer. */
  peerId(peer: string): PeerId | undefined {
    return this.#peers.get(peer.toLowerCase())?.peerId
  }

  /** Whether this PeerId is one of our relays. */
  isRelay(peerId: PeerId): boolean {
    return this.#relayIds.has(peerId.toString())
  }

  /** Hears of every peer reported (`Transport.onPeerSeen`). */
  onSeen(listener: (peer: Address, publicKey?: Hex) => void): void {
    this.#listeners.push(listener)
  }

  /**
   * A presence announcement signed by `from`: the peer it makes known, or undefined if it is ours, not a Sluice
   * peer's, malformed, off our clock, or not newer than the last one of that peer (a late copy or a replay). Only
   * circuit addresses that end at the announcer are kept, and direct addresses of the announcer that `directAddress`
   * accepts: an announcement must not make us dial anything else.
   */
  announced(from: PeerId, data: Uint8Array): Heard | undefined {
    const identity = identityOfPeer(from)
    if (!identity || identity.address.toLowerCase() === this.#me) return undefined
    const announcement = readAnnouncement(data)
    const now = this.#parameters.now?.() ?? Date.now()
    if (!announcement || Math.abs(announcement.ts - now) > maxClockSkewMs) return undefined
    const key = identity.address.toLowerCase()
    const known = this.#peers.get(key)
    if (known && announcement.ts <= known.ts) return undefined
    this.#peers.set(key, { peerId: from, session: announcement.session, ts: announcement.ts })
    const ending = (suffix: string, kind: (ma: Multiaddr) => boolean) =>
      announcement.addrs.flatMap((a) => {
        try {
          const ma = multiaddr(a)
          return kind(ma) && ma.toString().endsWith(`${suffix}/p2p/${from}`) ? [ma] : []
        } catch {
          return []
        }
      })
    const addrs = ending('/p2p-circuit', isCircuit)
    // For the direct connections alone (directPaths.ts, directConnections.ts): never in libp2p's peer store.
    const direct = announcement.addrs.flatMap((a) => directAddress(a, from, this.#parameters.allowPrivateDirect === true) ?? [])
    const webrtcAddrs = ending('/p2p-circuit/webrtc', isWebRtc)
    return {
      ...identity,
      peerId: from,
      how: 'presence',
      ts: announcement.ts,
      addrs,
      direct,
      newSession: known?.session !== announcement.session,
      ...(webrtcAddrs.length > 0 ? { webrtcAddrs } : {}),
    }
  }

  /**
   * A connection: a peer that connects to us is online now, and reachable over that connection; once it is gone,
   * through our relays, where it must hold a reservation. Undefined for our own dials, relays and non-Sluice peers.
   */
  connected(remotePeer: PeerId, direction: 'inbound' | 'outbound'): Heard | undefined {
    if (direction !== 'inbound' || this.isRelay(remotePeer)) return undefined
    const identity = identityOfPeer(remotePeer)
    if (!identity) return undefined
    const key = identity.address.toLowerCase()
    if (this.#peers.has(key)) return { ...identity, peerId: remotePeer, how: 'connection', addrs: [], direct: [], newSession: false }
    this.#peers.set(key, { peerId: remotePeer, ts: 0 })
    const addrs = this.#parameters.relays.map((r) => circuitThrough(r, remotePeer))
    return { ...identity, peerId: remotePeer, how: 'connection', addrs, direct: [], newSession: false }
  }

  /** Tells the listeners the peer is seen; true if a `want` waited for it (open the way to it now). */
  report(heard: Heard): boolean {
    this.#parameters.log?.({ type: 'peerSeen', peer: heard.address, how: heard.how, ...(heard.ts !== undefined ? { ts: heard.ts } : {}) })
    const wanted = this.#wanted.delete(heard.address.toLowerCase())
    this.#tell(heard.address, heard.publicKey)
    return wanted
  }

  #tell(peer: Address, publicKey: Hex): void {
    for (const listener of this.#listeners) {
      try {
        listener(peer, publicKey)
      } catch {
        // A listener's failure is its own; the others still hear of the peer.
      }
    }
  }

  /** Tells the listeners every known peer is seen (our way to them came back); not logged one by one. */
  reportAll(): void {
    for (const known of this.#peers.values()) {
      const identity = identityOfPeer(known.peerId)
      if (!identity) continue
      this.#tell(identity.address, identity.publicKey)
    }
  }

  /** Tells the listeners a known peer is seen again (its direct path closed: what waits for it goes through a relay now). */
  again(peerId: PeerId): void {
    const identity = identityOfPeer(peerId)
    if (identity && this.#peers.has(identity.address.toLowerCase())) this.#tell(identity.address, identity.publicKey)
  }

  /** `connect(peer)`: true if it is known (open the way now); otherwise it is wanted until it is seen. Never ourselves. */
  want(peer: string): boolean {
    const key = peer.toLowerCase()
    if (key === this.#me) return false
    if (this.#peers.has(key)) return true
    this.#wanted.add(key)
    return false
  }

  /** Forgets every peer and want (a stopped transport); the listeners stay. */
  clear(): void {
    this.#peers.clear()
    this.#wanted.clear()
  }
}
