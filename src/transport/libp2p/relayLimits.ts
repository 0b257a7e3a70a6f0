import { type BlockList, isIPv4 } from 'node:net'
import { TopicValidatorResult, type Message } from '@libp2p/gossipsub'
import type { Connection, ConnectionGater, MultiaddrConnection, PeerId } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import { DropLog, type DropCounts } from './dropLog.ts'
import { addressOfPeer } from './peerIdentity.ts'
import { maxClockSkewMs, readAnnouncement } from './presence.ts'
import type { PresenceAdmission } from './presenceRegistry.ts'
import { RateLimit } from './rateLimit.ts'
import { defaultRelayLimits, proxyList, relayDropReasons, type RelayDropReason, type RelayLimitsParameters } from './relayLimitOptions.ts'

export { defaultRelayLimits, relayDropReasons, type RelayDropReason, type RelayLimitsParameters }

/** What the relay knows that the limits read: its reservations and a peer's connections. */
export type RelayView = {
  reservations(): Iterable<[PeerId, { addr: Multiaddr }]>
  connectionsOf(peer: PeerId): Connection[]
}

type Ip = { address: string; family: 'ipv4' | 'ipv6' /** What limits count by: the address, an IPv6 one's /64. */; key: string }

/** The IP address a connection comes from, or undefined if it has none (a circuit). */
export function ipOf(addr: Multiaddr): Ip | undefined {
  const [first] = addr.getComponents()
  if (first?.value === undefined) return undefined
  if (first.name === 'ip4') return { address: first.value, family: 'ipv4', key: first.value }
  if (first.name !== 'ip6') return undefined
  const mapped = ipv4Mapped(first.value)
  if (mapped) return { address: mapped, family: 'ipv4', key: mapped }
  return { address: first.value, family: 'ipv6', key: ipv6Prefix(first.value) }
}

/** The IPv4 address in an IPv4-mapped IPv6 one (`::ffff:198.51.100.1`, or as multiaddr writes it, `::ffff:c633:6401`). */
function ipv4Mapped(address: string): string | undefined {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  if (dotted) return isIPv4(dotted) ? dotted : undefined
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (!hex) return undefined
  const [high, low] = [Number.parseInt(hex[1]!, 16), Number.parseInt(hex[2]!, 16)]
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')
}

/** The /64 of an IPv6 address, written in full (`2001:db8:0:1::/64`): one host holds a whole /64 as a rule. */
function ipv6Prefix(address: string): string {
  const groups = (part: string) => (part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])))
  const [head = '', tail] = address.split('::')
  const front = groups(head)
  const back = tail === undefined ? [] : groups(tail)
  const full = tail === undefined ? front : [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back]
  return `${full
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`
}

/**
 * The relay's limits per peer and per IP address, as libp2p's connection gater and the presence topic's validator
 * (docs/decisions/0064): new connections, open connections and reservations per address, bytes a second per peer
 * and per address (a connection over either is paused, so the sender waits and the relay does no work for it), the
 * size and the rate of announcements. What each refuses is counted and told by source (`DropLog`).
 */
export class RelayLimits {
  readonly drops: DropLog<RelayDropReason>
  readonly #limits: Required<Omit<RelayLimitsParameters, 'proxies'>>
  readonly #proxies: BlockList
  readonly #connectionRate: RateLimit
  readonly #circuitRate: RateLimit
  readonly #ipCircuitRate: RateLimit
  readonly #peerBytes: RateLimit
  readonly #ipBytes: RateLimit
  readonly #announcements: RateLimit
  /** Records put in the presence registry, by peer: apart from the topic's, since a node does both per announcement. */
  readonly #records: RateLimit
  /** Watches held in the presence registry by IP key. */
  readonly #watches = new Map<string, number>()
  /** Open connections by IP key. */
  readonly #connections = new Map<string, number>()
  /** Connections still in their handshake by IP key, and how each one's ends. */
  readonly #handshakes = new Map<string, number>()
  readonly #handshakeDone = new WeakMap<MultiaddrConnection, () => void>()
  #view: RelayView | undefined
  #connectionCount = 0

  constructor(
    limits: RelayLimitsParameters = {},
    report: { report?: (source: string, counts: DropCounts<RelayDropReason>) => void; intervalMs?: number } = {},
  ) {
    this.#limits = { ...defaultRelayLimits, ...definedOnly(limits) }
    this.#proxies = proxyList(limits.proxies ?? [])
    this.#connectionRate = new RateLimit(this.#limits.maxConnectionRate)
    this.#circuitRate = new RateLimit(this.#limits.maxCircuitRate)
    this.#ipCircuitRate = new RateLimit(this.#limits.maxConnectionRate)
    this.#peerBytes = new RateLimit(this.#limits.peerBytesPerSecond)
    this.#ipBytes = new RateLimit(this.#limits.ipBytesPerSecond)
    this.#announcements = new RateLimit(this.#limits.maxAnnouncementsPerMinute, 60)
    this.#records = new RateLimit(this.#limits.maxAnnouncementsPerMinute, 60)
    this.drops = new DropLog(relayDropReasons, report)
  }

  /** The relay's reservations and connections, once its libp2p node exists. */
  watch(view: RelayView): void {
    this.#view = view
  }

  /** Connections open now (inbound, handshakes included). */
  get connections(): number {
    return this.#connectionCount
  }

  /** The IP an address counts under, or undefined when no per-IP limit applies (a proxy's, or no IP). */
  #limited(addr: Multiaddr): Ip | undefined {
    const ip = ipOf(addr)
    return ip && !this.#proxies.check(ip.address, ip.family) ? ip : undefined
  }

  readonly gater: ConnectionGater = {
    denyInboundConnection: (maConn) => {
      const ip = this.#limited(maConn.remoteAddr)
      if (ip) {
        if (!this.#connectionRate.allows(ip.key)) return this.#refuse(ip.key, 'connectionRate')
        if ((this.#connections.get(ip.key) ?? 0) >= this.#limits.maxConnectionsPerIp) return this.#refuse(ip.key, 'connectionsPerIp')
        // libp2p lets 10 connections in all be in their handshake at once (128 here), each for up to 10 s: one address
        // holding them all would keep every other out.
        if ((this.#handshakes.get(ip.key) ?? 0) >= maxHandshakesPerIp) return this.#refuse(ip.key, 'handshakesPerIp')
      }
      this.#track(maConn, ip)
      return false
    },
    // Metered from here on: Noise reads the raw connection from now on (a listener added earlier would take the
    // handshake's first bytes from it), and the peer is known.
    denyInboundEncryptedConnection: (peer, maConn) => {
      this.#meter(maConn, peer.toString(), this.#limited(maConn.remoteAddr))
      return false
    },
    denyInboundUpgradedConnection: (_peer, maConn) => {
      this.#handshakeDone.get(maConn)?.()
      return false
    },
    // Each circuit costs the peer dialled a handshake: one peer, or one address, opening them fast is refused at once
    // (a node would otherwise take them all, or libp2p there hang the ones past its own rate until they time out).
    denyOutboundRelayedConnection: (source) => {
      if (!this.#circuitRate.allows(source.toString())) return this.#refuse(source.toString(), 'circuitRate')
      const ip = this.#ipOfPeer(source)
      return ip && !this.#ipCircuitRate.allows(ip.key) ? this.#refuse(ip.key, 'circuitRate') : false
    },
    denyInboundRelayReservation: (peer) => {
      const view = this.#view
      if (!view) return false
      const reservations = [...view.reservations()]
      // A peer renewing its reservation keeps it.
      if (reservations.some(([holder]) => holder.equals(peer))) return false
      const ip = this.#ipOfPeer(peer)
      if (!ip) return false
      const held = reservations.filter(([, r]) => ipOf(r.addr)?.key === ip.key).length
      return held >= this.#limits.maxReservationsPerIp ? this.#refuse(ip.key, 'reservationsPerIp') : false
    },
  }

  /** The address a peer is connected from, where the per-IP limits apply (not a proxy's). */
  #ipOfPeer(peer: PeerId): Ip | undefined {
    return this.#view
      ?.connectionsOf(peer)
      .map((c) => this.#limited(c.remoteAddr))
      .find((i) => i !== undefined)
  }

  #refuse(source: string, reason: RelayDropReason): true {
    this.drops.count(source, reason)
    return true
  }

  #track(maConn: MultiaddrConnection, ip: Ip | undefined): void {
    this.#connectionCount++
    if (ip) {
      add(this.#connections, ip.key, 1)
      add(this.#handshakes, ip.key, 1)
      let done = false
      this.#handshakeDone.set(maConn, () => {
        if (!done) add(this.#handshakes, ip.key, -1)
        done = true
      })
    }
    maConn.addEventListener(
      'close',
      () => {
        this.#connectionCount--
        this.#handshakeDone.get(maConn)?.()
        if (ip) add(this.#connections, ip.key, -1)
      },
      { once: true },
    )
  }

  /**
   * Counts what `peer` sends on this connection against its rate and its address's; over either, the connection is
   * paused (its data waits, then the relay reads it) until the window it overran ends.
   */
  #meter(maConn: MultiaddrConnection, peer: string, ip: Ip | undefined): void {
    let timer: ReturnType<typeof setTimeout> | undefined
    const resume = () => {
      timer = undefined
      try {
        maConn.resume()
      } catch {
        // Closed meanwhile: nothing to read.
      }
    }
    maConn.addEventListener('message', (event) => {
      const bytes = event.data.byteLength
      const peerWait = this.#peerBytes.take(peer, bytes)
      const ipWait = ip ? this.#ipBytes.take(ip.key, bytes) : 0
      const wait = Math.max(peerWait, ipWait)
      if (wait === 0 || timer !== undefined || maConn.status !== 'open') return
      this.drops.count(peerWait >= ipWait ? peer : ip!.key, peerWait >= ipWait ? 'peerThrottled' : 'ipThrottled')
      try {
        maConn.pause()
      } catch {
        return // its readable end is closed: nothing more comes
      }
      timer = setTimeout(resume, wait)
    })
    maConn.addEventListener('close', () => clearTimeout(timer), { once: true })
  }

  /**
   * The presence topic's validator: passes on a signed announcement of a node's key, fresh and small, from a
   * publisher within its rate. What is malformed is rejected (gossipsub then counts it against the peer that sent
   * it), what is only too often or stale is ignored.
   */
  readonly validateAnnouncement = (from: PeerId, msg: Message): TopicValidatorResult => {
    const source = from.toString()
    if (msg.data.byteLength > this.#limits.maxAnnouncementBytes) return this.#drop(source, 'announcementTooLarge', TopicValidatorResult.Reject)
    const announcement = msg.type === 'signed' && addressOfPeer(msg.from) ? readAnnouncement(msg.data) : undefined
    if (msg.type !== 'signed' || !announcement) return this.#drop(source, 'announcementInvalid', TopicValidatorResult.Reject)
    if (Math.abs(announcement.ts - Date.now()) > maxClockSkewMs) return this.#drop(source, 'announcementStale', TopicValidatorResult.Ignore)
    // By publisher: a node with several relays passes each one's announcements on to the others.
    const publisher = msg.from.toString()
    if (!this.#announcements.allows(publisher)) return this.#drop(publisher, 'announcementTooOften', TopicValidatorResult.Ignore)
    return TopicValidatorResult.Accept
  }

  /**
   * What one presence stream may do in the registry (docs/decisions/0067): put its node's record as often as it may
   * announce on the topic, and watch addresses while all the streams of its IP address watch fewer than
   * `maxWatchesPerIp` together. What it may not is dropped and counted.
   */
  presenceAdmission(connection: { remotePeer: PeerId; remoteAddr: Multiaddr }): PresenceAdmission {
    const peer = connection.remotePeer.toString()
    const ip = this.#limited(connection.remoteAddr)
    let held = 0
    return {
      put: () => {
        if (this.#records.allows(peer)) return true
        this.drops.count(peer, 'announcementTooOften')
        return false
      },
      watch: (wanted) => {
        if (!ip) return wanted
        const granted = Math.max(0, Math.min(wanted, this.#limits.maxWatchesPerIp - (this.#watches.get(ip.key) ?? 0)))
        if (granted < wanted) this.drops.count(ip.key, 'watchesPerIp')
        add(this.#watches, ip.key, granted)
        held += granted
        return granted
      },
      release: () => {
        if (ip) add(this.#watches, ip.key, -held)
        held = 0
      },
    }
  }

  #drop(source: string, reason: RelayDropReason, result: TopicValidatorResult): TopicValidatorResult {
    this.drops.count(source, reason)
    return result
  }

  stop(): void {
    this.drops.stop()
  }
}

/** Connections one address may have in their handshake at once (libp2p's own limit in all is raised to 128). */
export const maxHandshakesPerIp = 8

/** Adds `n` to a count by key, forgetting the key at 0. */
function add(counts: Map<string, number>, key: string, n: number): void {
  const count = (counts.get(key) ?? 0) + n
  if (count > 0) counts.set(key, count)
  else counts.delete(key)
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}
