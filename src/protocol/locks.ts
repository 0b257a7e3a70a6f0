import { bytesToHex, sha256, type Hex } from 'viem'
import { keccak256Hex } from './keccak.ts'
import { PackedWriter } from './packedWriter.ts'

/** A hash time lock: `amount` goes to the receiver if the secret of `secrethash` is revealed before `expiration`. */
export type Lock = {
  /** Block number from which the lock can no longer be claimed. */
  expiration: bigint
  amount: bigint
  secrethash: Hex
}

/** keccak256 of no bytes: the locksroot of a channel end with no pending locks. */
export const LOCKSROOT_OF_NO_LOCKS: Hex = '0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470'

/** The 96-byte encoding: `uint256 expiration || uint256 amount || bytes32 secrethash`. */
export function encodeLock(lock: Lock): Hex {
  return bytesToHex(packLocks([lock]))
}

/**
 * Each lock's 96 bytes, packed once. Every balance proof packs all the pending locks of its channel end again (up
 * to the lock limit) and a lock stays pending across many of them; state is never mutated, so a lock object's
 * bytes never change. A memo of a pure function: it decides nothing.
 */
const packed = new WeakMap<Lock, Uint8Array>()

function lockBytes(lock: Lock): Uint8Array {
  let bytes = packed.get(lock)
  if (bytes === undefined) {
    bytes = new PackedWriter(96).uint(lock.expiration, 32).uint(lock.amount, 32).fixed(lock.secrethash, 32).done()
    packed.set(lock, bytes)
  }
  return bytes
}

/** The locks' 96-byte encodings, concatenated in order, as bytes. */
export function packLocks(locks: readonly Lock[]): Uint8Array {
  const bytes = new Uint8Array(96 * locks.length)
  for (const [i, lock] of locks.entries()) bytes.set(lockBytes(lock), 96 * i)
  return bytes
}

/** The pending locks concatenated in insertion order, as `TokenNetwork.unlock` takes them. */
export function encodeLocks(locks: readonly Lock[]): Hex {
  return bytesToHex(packLocks(locks))
}

/** keccak256 of the concatenated locks; order matters. */
export function locksroot(locks: readonly Lock[]): Hex {
  return locks.length === 0 ? LOCKSROOT_OF_NO_LOCKS : keccak256Hex(packLocks(locks))
}

/** SHA-256 of a 32-byte secret, as the SecretRegistry computes it. */
export function secrethashOf(secret: Hex): Hex {
  return sha256(secret)
}
