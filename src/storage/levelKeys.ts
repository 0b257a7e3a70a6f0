import { hashKey, lockSuffix, padNonce } from './sentRecords.ts'
import type { PaymentRecord, ReceivedRecord, SentLockRecord, SentProofRecord, StorageIdentity, StoredChainEvent } from './storage.ts'
import { isSentPayment } from './storage.ts'

/**
 * The LevelDB key layout. Keys are strings ordered byte-wise, so numbers are zero-padded to a fixed width
 * (lexicographic order = numeric order) and each kind of row has a prefix ending in `!`. Secondary indexes
 * are extra keys with an empty value whose suffix is the primary key's suffix, written in the same batch as
 * the row: a filtered, paged query is one range scan over an index.
 */
export const META_KEY = 'meta'
export const SNAPSHOT_KEY = 'snapshot'

/** Safe integers have at most 16 decimal digits; uint256 at most 78. */
const pad = (n: number) => n.toString().padStart(16, '0')
const padUint256 = (n: bigint) => n.toString().padStart(78, '0')

export const CHANGES = 'c!'
export const EVENTS = 'e!'
export const PAYMENTS = 'p!'
export const CHAIN_EVENTS = 'ce!'
export const OUTBOX = 'o!'
export const TRANSACTIONS = 'tx!'

export const SENT_PROOFS = 'sp!'
export const SENT_LOCKS = 'sl!'
export const RECEIVED = 'rm!'
/** The transaction journal (schema 5): `ctx!<nonce, 16 digits>`, so the prefix's range is in nonce order. */
export const CHAIN_TRANSACTIONS = 'ctx!'

export const changeKey = (seq: number) => CHANGES + pad(seq)
export const eventKey = (seq: number) => EVENTS + pad(seq)
export const paymentKey = (seq: number) => PAYMENTS + pad(seq)
export const outboxKey = (key: string) => OUTBOX + key
export const transactionKey = (key: string) => TRANSACTIONS + key
export const chainTransactionKey = (nonce: number) => CHAIN_TRANSACTIONS + pad(nonce)

/** `sp!<channelKey>!<balanceHash, lower case>`: looked up by exact key. */
export const sentProofKey = (channelKey: string, balanceHash: string) => `${SENT_PROOFS}${channelKey}!${hashKey(balanceHash)}`
export const sentProofKeyOf = (p: SentProofRecord) => sentProofKey(p.channelKey, p.balanceHash)

/** `sl!<channelKey>!<addedNonce, 20 digits>!<secrethash, lower case>`: a channel's locks in the order they were added. */
export const sentLockKey = (l: SentLockRecord) => `${SENT_LOCKS}${l.channelKey}!${lockSuffix(l)}`

/**
 * `rm!<channelKey>!<nonce, 20 digits>`: looked up by exact key (the nonce's fixed width at the end keeps two channels
 * apart even when a channel key holds `!`); one channel's records are one key range, in nonce order.
 */
export const receivedKey = (channelKey: string, nonce: bigint) => `${RECEIVED}${channelKey}!${padNonce(nonce)}`
export const receivedKeyOf = (r: ReceivedRecord) => receivedKey(r.channelKey, r.nonce)

/**
 * The keys of the locks of `channelKey` added at or before `nonce`: after the padded nonce comes `!`, and `"` sorts
 * right after it. A channel key holding `!` could bring another channel's keys into the range: filter the rows.
 */
export function sentLocksRange(channelKey: string, nonce: bigint): { gte: string; lt: string } {
  return { gte: `${SENT_LOCKS}${channelKey}!${padNonce(0n)}!`, lt: `${SENT_LOCKS}${channelKey}!${padNonce(nonce)}"` }
}

/** The payment indexes' prefixes: by token, by partner, by token and partner (addresses lower case). */
export function paymentIndexPrefix(token: string | undefined, partner: string | undefined): string {
  const t = token?.toLowerCase()
  const p = partner?.toLowerCase()
  return t !== undefined && p !== undefined ? `ptp!${t}!${p}!` : t !== undefined ? `pt!${t}!` : p !== undefined ? `pp!${p}!` : PAYMENTS
}

export function paymentIndexKeys(p: PaymentRecord): string[] {
  const seq = pad(p.seq)
  const keys = [paymentIndexPrefix(p.token, undefined) + seq, paymentIndexPrefix(undefined, p.partner) + seq, paymentIndexPrefix(p.token, p.partner) + seq]
  const sent = sentIdentifierKey(p)
  return sent ? [...keys, sent] : keys
}

/** A sent payment's key in the index by target and identifier; none for a received or mediated one. */
export const sentIdentifierKey = (p: PaymentRecord): string | undefined =>
  isSentPayment(p) ? sentIdentifierPrefix(p.partner, p.identifier) + pad(p.seq) : undefined

/**
 * The index of sent payments by target and identifier (schema 4): the identifier as 20 zero-padded decimal digits
 * (a uint64), so one identifier is one key range and its latest payment the range's last key.
 */
export const sentIdentifierPrefix = (target: string, identifier: bigint) => `psi!${target.toLowerCase()}!${identifier.toString().padStart(20, '0')}!`

/** A payment index key names its row by its last 16 characters (the seq). */
export const paymentKeyOfIndexKey = (key: string) => PAYMENTS + key.slice(-16)

/** `<block>!<logIndex>`: the position of a chain event, shared by its row and its index keys. */
const position = (e: StoredChainEvent) => `${pad(Number(e.blockNumber))}!${pad(e.logIndex)}`

export const chainEventKey = (e: StoredChainEvent) => CHAIN_EVENTS + position(e)

/** The chain event indexes' prefixes; the narrowest one the query allows (channel, token network, address). */
export function chainEventIndexPrefix(query: { address?: string; tokenNetwork?: string; channelId?: bigint }): string {
  if (query.channelId !== undefined) return `cech!${padUint256(query.channelId)}!`
  if (query.tokenNetwork !== undefined) return `cetn!${query.tokenNetwork.toLowerCase()}!`
  if (query.address !== undefined) return `cea!${query.address.toLowerCase()}!`
  return CHAIN_EVENTS
}

export function chainEventIndexKeys(e: StoredChainEvent): string[] {
  const at = position(e)
  const keys = [chainEventIndexPrefix({ address: e.address }) + at]
  if (e.tokenNetwork !== undefined) keys.push(chainEventIndexPrefix({ tokenNetwork: e.tokenNetwork }) + at)
  if (e.channelId !== undefined) keys.push(chainEventIndexPrefix({ channelId: e.channelId }) + at)
  return keys
}

/** A chain event index key names its row by its last 33 characters (`<block>!<logIndex>`). */
export const chainEventKeyOfIndexKey = (key: string) => CHAIN_EVENTS + key.slice(-33)

/** Keys under `prefix` whose block is within [from, to]: after the block comes `!`, and `"` sorts right after it. */
export function blockRange(prefix: string, from: number, to: number): { gte: string; lt: string } {
  return { gte: `${prefix}${pad(from)}!`, lt: `${prefix}${pad(to)}"` }
}

/** Every key that starts with `prefix` (which ends in `!`; `"` is the next character). */
export function prefixRange(prefix: string): { gte: string; lt: string } {
  return { gte: prefix, lt: `${prefix.slice(0, -1)}"` }
}

/** The store's directory name under the data directory: `<chainId>-<registry>-<address>`, lower case. */
export function levelDirName(identity: StorageIdentity): string {
  return `${identity.chainId}-${identity.registry.toLowerCase()}-${identity.address.toLowerCase()}`
}
