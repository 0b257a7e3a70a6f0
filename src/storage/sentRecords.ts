import { maxUint64, maxUint256 } from 'viem'
import { StorageError, type SentLockRecord, type SentProofRecord } from './storage.ts'

/**
 * What the adapters share about sent proofs and sent locks: their keys and the "alive at a nonce" rule. Nonces are
 * uint64 and IndexedDB keys cannot be bigints, so in keys a nonce is its decimal string zero-padded to 20 digits
 * (string order = numeric order). Hashes are compared in lower case: the same hash in other letters is the same key.
 */

export const padNonce = (nonce: bigint): string => nonce.toString().padStart(20, '0')

export const hashKey = (hash: string): string => hash.toLowerCase()

/** Whether `lock` is pending in the proof with nonce `nonce`: added at or before it, not removed at or before it. */
export function lockAlive(lock: SentLockRecord, nonce: bigint): boolean {
  return lock.addedNonce <= nonce && (lock.removedNonce === undefined || lock.removedNonce > nonce)
}

/** The order of `sentLocks`: by addedNonce, then secret hash (lower case). */
export function byAdded(a: SentLockRecord, b: SentLockRecord): number {
  if (a.addedNonce !== b.addedNonce) return a.addedNonce < b.addedNonce ? -1 : 1
  const [x, y] = [hashKey(a.secrethash), hashKey(b.secrethash)]
  return x < y ? -1 : x > y ? 1 : 0
}

/** The order of sent proofs in a dump: by channel, then balance hash. */
export function byProofKey(a: SentProofRecord, b: SentProofRecord): number {
  const [x, y] = [`${a.channelKey}\u0000${hashKey(a.balanceHash)}`, `${b.channelKey}\u0000${hashKey(b.balanceHash)}`]
  return x < y ? -1 : x > y ? 1 : 0
}

/** Memory and LevelDB key suffixes of one sent lock within its channel: `<addedNonce padded>!<secrethash>`. */
export const lockSuffix = (lock: SentLockRecord): string => `${padNonce(lock.addedNonce)}!${hashKey(lock.secrethash)}`

const HASH = /^0x[0-9a-fA-F]{64}$/

export function checkChannelKey(channelKey: unknown, what = 'channelKey'): string {
  if (typeof channelKey !== 'string' || channelKey === '') throw new StorageError(`invalid ${what}: ${String(channelKey)}`)
  return channelKey
}

export function checkHash(hash: unknown, what: string): string {
  if (typeof hash !== 'string' || !HASH.test(hash)) throw new StorageError(`invalid ${what}: ${String(hash)}`)
  return hash
}

export function checkUint(value: unknown, max: bigint, what: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > max) throw new StorageError(`invalid ${what}: ${String(value)}`)
  return value
}

export function checkSentProof(p: SentProofRecord): void {
  checkChannelKey(p?.channelKey, 'sent proof channelKey')
  checkHash(p.balanceHash, 'sent proof balanceHash')
  checkUint(p.nonce, maxUint64, 'sent proof nonce')
  checkUint(p.transferredAmount, maxUint256, 'sent proof transferredAmount')
  checkUint(p.lockedAmount, maxUint256, 'sent proof lockedAmount')
  checkHash(p.locksroot, 'sent proof locksroot')
}

export function checkSentLock(l: SentLockRecord): void {
  checkChannelKey(l?.channelKey, 'sent lock channelKey')
  checkHash(l.secrethash, 'sent lock secrethash')
  checkUint(l.expiration, maxUint256, 'sent lock expiration')
  checkUint(l.amount, maxUint256, 'sent lock amount')
  checkUint(l.addedNonce, maxUint64, 'sent lock addedNonce')
  if (l.removedNonce !== undefined) {
    checkUint(l.removedNonce, maxUint64, 'sent lock removedNonce')
    if (l.removedNonce <= l.addedNonce) throw new StorageError(`sent lock removedNonce ${l.removedNonce} is not after its addedNonce ${l.addedNonce}`)
  }
}

/**
 * The checked arguments of a `sentLocks` query, or undefined when no lock can be alive at `nonce` (a negative one).
 * A nonce above uint64 sees what the largest one sees.
 */
export function sentLocksQuery(channelKey: unknown, nonce: unknown): { channelKey: string; nonce: bigint } | undefined {
  checkChannelKey(channelKey)
  if (typeof nonce !== 'bigint') throw new StorageError(`the nonce must be a bigint, not ${typeof nonce}`)
  if (nonce < 0n) return undefined
  return { channelKey: channelKey as string, nonce: nonce > maxUint64 ? maxUint64 : nonce }
}

export function sentProofQuery(channelKey: unknown, balanceHash: unknown): { channelKey: string; hash: string } {
  return { channelKey: checkChannelKey(channelKey), hash: hashKey(checkHash(balanceHash, 'balanceHash')) }
}
