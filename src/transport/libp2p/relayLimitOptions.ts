import { BlockList, isIPv4 } from 'node:net'

// What a relay's limits are and what they count (docs/decisions/0064), apart from the limits themselves: the command
// reads its flags with them before it loads libp2p.

/** What a relay allows one peer and one IP address (docs/decisions/0064); every field has a default. */
export type RelayLimitsParameters = {
  /** Peers of one IP address that may hold a reservation at once (default 100). */
  maxReservationsPerIp?: number
  /** Connections one IP address may hold open at once, handshakes included (default 200). */
  maxConnectionsPerIp?: number
  /** New connections one IP address may open a second, and new circuits its peers may open a second (default 100). */
  maxConnectionRate?: number
  /** New circuits (relayed connections to other peers) one peer may open a second (default 50). */
  maxCircuitRate?: number
  /** Bytes a second one peer may send the relay, whatever they carry (default 1 MiB); over it, its connection waits. */
  peerBytesPerSecond?: number
  /** Bytes a second all the peers of one IP address may send it together (default 4 MiB). */
  ipBytesPerSecond?: number
  /** The largest presence announcement passed on (default 4096 bytes; one is a few hundred). */
  maxAnnouncementBytes?: number
  /** Announcements one peer may publish a minute (default 60; a node announces twice a minute, and once per newcomer). */
  maxAnnouncementsPerMinute?: number
  /**
   * Addresses the nodes of one IP address may watch at once in the presence registry, all their streams together
   * (default 65,536: a hub watches its partners; one address opening stream after stream must not fill the relay's
   * memory with watches).
   */
  maxWatchesPerIp?: number
  /**
   * Addresses (or CIDR blocks, `10.0.0.0/8`) of reverse proxies in front of the relay: every peer behind one arrives
   * from its address, so the per-IP limits do not apply to them (the per-peer ones still do).
   */
  proxies?: readonly string[]
}

export const defaultRelayLimits = {
  maxReservationsPerIp: 100,
  maxConnectionsPerIp: 200,
  maxConnectionRate: 100,
  maxCircuitRate: 50,
  peerBytesPerSecond: 1024 * 1024,
  ipBytesPerSecond: 4 * 1024 * 1024,
  maxAnnouncementBytes: 4096,
  maxAnnouncementsPerMinute: 60,
  maxWatchesPerIp: 65_536,
} as const

export const relayDropReasons = [
  /** A new connection over the IP address's rate: refused. */
  'connectionRate',
  /** A new connection past the IP address's open connections: refused. */
  'connectionsPerIp',
  /** A new connection while 8 of the IP address's are still in their handshake: refused. */
  'handshakesPerIp',
  /** A reservation past the IP address's reservations: refused. */
  'reservationsPerIp',
  /** A new circuit past the peer's, or its IP address's, circuits a second: refused. */
  'circuitRate',
  /** A peer went over its bytes a second: its connection was paused until it was under. */
  'peerThrottled',
  /** An IP address went over its bytes a second: the connection was paused until it was under. */
  'ipThrottled',
  /** An announcement larger than the limit: dropped. */
  'announcementTooLarge',
  /** An announcement that is none (not signed by a node's key, or malformed): dropped. */
  'announcementInvalid',
  /** An announcement whose time is more than 10 minutes from the relay's (an old one replayed): dropped. */
  'announcementStale',
  /** An announcement past its publisher's announcements a minute, on the topic or put in the registry: dropped. */
  'announcementTooOften',
  /** Watches in the presence registry past the IP address's: not taken (the node hears nothing of those addresses). */
  'watchesPerIp',
] as const
export type RelayDropReason = (typeof relayDropReasons)[number]

export function proxyList(proxies: readonly string[]): BlockList {
  const list = new BlockList()
  for (const entry of proxies) {
    const [address = '', prefix] = entry.split('/')
    const family = isIPv4(address) ? 'ipv4' : 'ipv6'
    if (prefix === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(prefix), family)
  }
  return list
}

/** Whether `entry` is an IP address or a CIDR block `proxies` takes. */
export function isProxyEntry(entry: string): boolean {
  try {
    proxyList([entry])
    const prefix = entry.split('/')[1]
    return prefix === undefined || /^\d{1,3}$/.test(prefix)
  } catch {
    return false
  }
}
