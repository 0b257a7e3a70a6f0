import { isAddress } from 'viem'
import { StorageError, type StorageIdentity } from './storage.ts'

/** Refuses an identity that could not name a database: a chain id that is not a positive bigint, or a bad address. */
export function checkIdentity(identity: StorageIdentity): void {
  if (typeof identity.chainId !== 'bigint' || identity.chainId <= 0n) throw new StorageError(`invalid chain id: ${String(identity.chainId)}`)
  for (const field of ['registry', 'address'] as const) {
    if (!isAddress(identity[field], { strict: false })) throw new StorageError(`invalid ${field} address: ${String(identity[field])}`)
  }
}

/** The database name (and Web Lock name): `sluice:<chainId>:<registry>:<address>`, addresses lower case. */
export function storageName(identity: StorageIdentity): string {
  return `sluice:${identity.chainId}:${identity.registry.toLowerCase()}:${identity.address.toLowerCase()}`
}

/** Same chain, registry and node address (addresses compared without their checksum case). */
export function sameIdentity(a: StorageIdentity, b: StorageIdentity): boolean {
  return a.chainId === b.chainId && a.registry.toLowerCase() === b.registry.toLowerCase() && a.address.toLowerCase() === b.address.toLowerCase()
}
