import { getAddress, type Address, type Hex } from 'viem'
import { InvalidMessageError } from '../errors.ts'

/**
 * Field readers for untrusted JSON: each checks one field's form and range and throws InvalidMessageError
 * naming the field. Integers come as decimal strings (or safe JSON integers); addresses as 0x-hex in lower
 * case or valid EIP-55; byte strings as 0x-hex of the exact length.
 */
export type Json = Record<string, unknown>

export function object(value: unknown, field: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidMessageError(field, 'expected an object')
  return value as Json
}

export function uint(value: unknown, field: string, bits: 8 | 64 | 256): bigint {
  let n: bigint
  if (typeof value === 'string' && /^(0|[1-9]\d*)$/.test(value) && value.length <= 78) n = BigInt(value)
  else if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) n = BigInt(value)
  else throw new InvalidMessageError(field, 'expected an unsigned integer as a decimal string')
  if (n >> BigInt(bits) !== 0n) throw new InvalidMessageError(field, `does not fit in uint${bits}`)
  return n
}

export function address(value: unknown, field: string): Address {
  if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(value)) throw new InvalidMessageError(field, 'expected a 20-byte 0x address')
  const checksummed = getAddress(value)
  const body = value.slice(2)
  // Mixed case claims a checksum: it must be the right one.
  if (body !== body.toLowerCase() && body !== body.toUpperCase() && checksummed !== value) throw new InvalidMessageError(field, 'bad EIP-55 checksum')
  return checksummed
}

export function bytes(value: unknown, field: string, length: number): Hex {
  if (typeof value !== 'string' || value.length !== 2 + 2 * length || !/^0x[0-9a-fA-F]*$/.test(value))
    throw new InvalidMessageError(field, `expected ${length} bytes as 0x-hex`)
  return value.toLowerCase() as Hex
}

export function bool(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw new InvalidMessageError(field, 'expected true or false')
  return value
}

/** Python's naive ISO-8601 UTC timestamp, with or without microseconds. */
export function timestamp(value: unknown, field: string): string {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?$/.test(value))
    throw new InvalidMessageError(field, 'expected a timestamp YYYY-MM-DDTHH:MM:SS[.ffffff]')
  return value
}
