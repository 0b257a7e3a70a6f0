import { stringToBytes, type Hex } from 'viem'
import { keccak256Hex } from '../keccak.ts'

/**
 * Canonical JSON (RFC 8785 for the values Raiden metadata holds): object keys sorted by code unit,
 * no whitespace. Python's canonicaljson and the light client's json-canonicalize agree on it.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no NaN or Infinity')
    return JSON.stringify(value)
  }
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  throw new TypeError(`canonical JSON cannot hold a ${typeof value}`)
}

/** keccak256 of the canonical JSON of a LockedTransfer's metadata (the last 32 bytes of its message hash). */
export function metadataHash(metadata: unknown): Hex {
  return keccak256Hex(stringToBytes(canonicalJson(metadata)))
}
