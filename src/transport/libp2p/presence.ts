/**
 * Presence announcements on one gossipsub topic that the relays join (they are its hubs). Gossipsub signs each
 * message with the sender's PeerId key (StrictSign), so the sender's address comes from `msg.from`, never from
 * the payload; the payload only says how to reach it.
 */
export type Announcement = {
  v: 1
  /** Random per start: a new session means the peer restarted, so what waits for it must go now. */
  session: string
  /**
   * Where to dial it: its circuit addresses on the relays where it holds a reservation, then its direct addresses
   * if it listens (each ending in its /p2p/; a node before those accepts the circuits only).
   */
  addrs: string[]
  /** Sender's clock, ms. A receiver ignores announcements older than the newest it has from that peer. */
  ts: number
}

/** The most addresses an announcement may list: a receiver refuses one with more. */
export const maxAddresses = 16

/** Ignore announcements whose clock is further than this from ours (a replay of an old one, say). */
export const maxClockSkewMs = 10 * 60_000

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

export function encodeAnnouncement(announcement: Announcement): Uint8Array {
  return encoder.encode(JSON.stringify(announcement))
}

/** The announcement in `data`, or undefined if it is malformed. */
export function readAnnouncement(data: Uint8Array): Announcement | undefined {
  try {
    const a = JSON.parse(decoder.decode(data)) as Record<string, unknown>
    if (!a || typeof a !== 'object' || a.v !== 1) return undefined
    if (typeof a.session !== 'string' || a.session.length === 0 || a.session.length > 64) return undefined
    if (!Array.isArray(a.addrs) || a.addrs.length > maxAddresses || !a.addrs.every((x) => typeof x === 'string' && x.length < 1024)) return undefined
    if (typeof a.ts !== 'number' || !Number.isSafeInteger(a.ts)) return undefined
    return { v: 1, session: a.session, addrs: a.addrs as string[], ts: a.ts }
  } catch {
    return undefined
  }
}
