import type { PeerId, PrivateKey } from '@libp2p/interface'
import { peerIdFromString } from '@libp2p/peer-id'

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

/**
 * Presence v2 (docs/transport.md, Presence): an announcement signed by its announcer, kept by each relay and handed to the
 * nodes that watch its address. The signature is over this prefix and the announcement's text: never a message a
 * contract or another libp2p protocol could take for its own (the key is also the node's Ethereum key).
 */
export type PresenceRecord = {
  /** The announcer's PeerId: its key checks `sig`, and its Ethereum address is what watchers ask for. */
  peer: string
  /** The announcement, as signed (JSON of `Announcement`). */
  announcement: string
  /** The signature of `recordDomain + announcement` by the peer's key, hex. */
  sig: string
}

export const recordDomain = 'sluice/presence/2:'

/** What a node tells a relay on its presence stream: its own record, and the addresses it wants to hear of. */
export type ToRelay = { put?: PresenceRecord; watch?: string[] }
/**
 * What a relay tells a node: the records of addresses it watches, when it asks and whenever one is newer; and the
 * watched addresses whose record it no longer keeps (`gone`: the node left the relay, or its record grew too old), so
 * that a watcher knows who is online there now. A node from before `gone` reads the records and ignores the rest.
 */
export type FromRelay = { records: PresenceRecord[]; gone?: string[] }

/** Addresses one message may watch; a relay keeps at most `maxWatches` per node. */
export const maxWatchBatch = 512
export const maxWatches = 16_384
/** A presence frame larger than this is refused (a record is at most about 17 KiB). */
export const maxPresenceFrameBytes = 256 * 1024

const toHex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
const fromHex = (hex: string) => (/^([0-9a-f]{2})+$/.test(hex) ? Uint8Array.from(hex.match(/../g)!, (b) => Number.parseInt(b, 16)) : undefined)
const isAddress = (x: unknown): x is string => typeof x === 'string' && /^0x[0-9a-f]{40}$/.test(x)

/** This node's record: its announcement signed with its key. */
export async function signRecord(privateKey: PrivateKey, peer: string, announcement: Announcement): Promise<PresenceRecord> {
  const text = JSON.stringify(announcement)
  const sig = await privateKey.sign(encoder.encode(recordDomain + text))
  return { peer, announcement: text, sig: toHex(sig) }
}

/** The record's shape, or undefined: a peer id, an announcement of bounded size, a hex signature. Not checked yet. */
export function readRecord(x: unknown): PresenceRecord | undefined {
  if (!x || typeof x !== 'object') return undefined
  const { peer, announcement, sig } = x as Record<string, unknown>
  if (typeof peer !== 'string' || peer.length > 128 || typeof announcement !== 'string' || announcement.length > 20_000) return undefined
  if (typeof sig !== 'string' || sig.length > 300) return undefined
  return { peer, announcement, sig }
}

/**
 * The announcer and its announcement's bytes, if the record is signed by the key of the PeerId it names (a
 * secp256k1 one: a Sluice node); undefined otherwise. What the announcement says is the peer directory's to judge.
 */
export async function openRecord(record: PresenceRecord): Promise<{ peerId: PeerId; data: Uint8Array } | undefined> {
  try {
    const peerId = peerIdFromString(record.peer)
    const sig = fromHex(record.sig)
    if (peerId.type !== 'secp256k1' || !sig) return undefined
    const ok = await peerId.publicKey.verify(encoder.encode(recordDomain + record.announcement), sig)
    return ok ? { peerId, data: encoder.encode(record.announcement) } : undefined
  } catch {
    return undefined
  }
}

export const encodePresence = (message: ToRelay | FromRelay): Uint8Array => encoder.encode(JSON.stringify(message))

function parse(data: Uint8Array): Record<string, unknown> | undefined {
  try {
    const x = JSON.parse(decoder.decode(data)) as unknown
    return x && typeof x === 'object' && !Array.isArray(x) ? (x as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** A node's message to a relay, checked: a record's shape, lowercase addresses, at most `maxWatchBatch` of them. */
export function readToRelay(data: Uint8Array): ToRelay | undefined {
  const x = parse(data)
  if (!x) return undefined
  const message: ToRelay = {}
  if (x.put !== undefined) {
    const put = readRecord(x.put)
    if (!put) return undefined
    message.put = put
  }
  if (x.watch !== undefined) {
    if (!Array.isArray(x.watch) || x.watch.length > maxWatchBatch || !x.watch.every(isAddress)) return undefined
    message.watch = x.watch
  }
  return message
}

/**
 * A relay's message to a node: records whose shape is right (each still to be opened), and the lowercase addresses
 * it says are gone (at most `maxWatchBatch`); the others are left out.
 */
export function readFromRelay(data: Uint8Array): FromRelay | undefined {
  const x = parse(data)
  if (!x || !Array.isArray(x.records)) return undefined
  const records = x.records.flatMap((r) => readRecord(r) ?? [])
  const gone = Array.isArray(x.gone) ? x.gone.slice(0, maxWatchBatch).filter(isAddress) : []
  return gone.length > 0 ? { records, gone } : { records }
}
