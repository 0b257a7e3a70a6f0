import type { PeerId } from '@libp2p/interface'
import type { Address, Hex } from 'viem'
import type { PeerRecordCheck } from '../transport.ts'
import { identityOfPeer } from './peerIdentity.ts'
import { maxClockSkewMs, openRecord, readAnnouncement, readRecord } from './presence.ts'

export type OpenedAddressMetadata = { ok: true; peerId: PeerId; publicKey: Hex; data: Uint8Array } | Extract<PeerRecordCheck, { ok: false }>

/**
 * `value`, handed on by a third party as `peer`'s presence record under Raiden's names (a pathfinding service's
 * `address_metadata`, a LockedTransfer's route metadata: `user_id` the peer id, `displayname` the signature,
 * `capabilities` the signed announcement; docs/decisions/0072, 0073), opened: the announcer's PeerId and public key
 * and the announcement's bytes when it is a record (three strings of bounded size), signed by the key of the PeerId it
 * names, that key is `peer`'s (its address is `peer`), and what it signed is an announcement within our clock window
 * (as a relay's record must be); else why not. Never throws, whatever the third party sent.
 */
export async function openAddressMetadata(peer: Address, value: unknown, now = Date.now()): Promise<OpenedAddressMetadata> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { ok: false, reason: 'not an object' }
  const { user_id, displayname, capabilities } = value as Record<string, unknown>
  const record = readRecord({ peer: user_id, announcement: capabilities, sig: displayname })
  if (!record) return { ok: false, reason: 'user_id, displayname or capabilities missing, not a string, or too long' }
  const opened = await openRecord(record)
  if (!opened) return { ok: false, reason: 'its signature does not check against the key of its user_id' }
  const identity = identityOfPeer(opened.peerId)
  if (!identity || identity.address.toLowerCase() !== peer.toLowerCase())
    return { ok: false, reason: `its user_id is ${identity ? `the key of ${identity.address}` : 'not an Ethereum key'}, not of ${peer}` }
  const announcement = readAnnouncement(opened.data)
  if (!announcement) return { ok: false, reason: 'its capabilities are not a presence announcement' }
  // Off our clock as the relays' records are (an old record replayed): where it says to dial may be long gone.
  if (Math.abs(announcement.ts - now) > maxClockSkewMs)
    return { ok: false, reason: `it was announced ${Math.round((now - announcement.ts) / 1000)} s from our clock, beyond ${maxClockSkewMs / 1000} s` }
  return { ok: true, peerId: opened.peerId, publicKey: identity.publicKey, data: opened.data }
}
