import { bytesToHex, getAddress, hexToBytes, isAddress, type Address, type Hex } from 'viem'
import { keccak256Bytes } from '../protocol/keccak.ts'
import { BackupMalformedError, BackupUnsignedError } from './errors.ts'

/**
 * A sealed copy of a node's state and its wire form (docs/decisions/0032-off-browser-backup.md). Pure: the bytes
 * every party computes the same way, the JSON a server stores and serves, and how that JSON is read.
 *
 *   {"format": "sluice-backup/1", "address": "0x<EIP-55>", "version": "<decimal>",
 *    "ciphertext": "0x<iv (12) || AES-256-GCM(payload) || tag (16)>", "signature": "0x<65 bytes>"}
 */
export const FORMAT = 'sluice-backup/1'

/** The bytes that open every layout: the format, so nothing signed or encrypted here can mean anything elsewhere. */
const DOMAIN = new TextEncoder().encode(FORMAT)
/** What a layout is for: a copy, or a request to fetch one. Two purposes can never share signed bytes. */
const PURPOSE_COPY = 0x01
const PURPOSE_FETCH = 0x02

export const IV_BYTES = 12
export const TAG_BYTES = 16
/** The shortest ciphertext: an empty payload's IV and tag. */
export const MIN_CIPHERTEXT_BYTES = IV_BYTES + TAG_BYTES
/** Versions are uint64 above zero: the first copy is version 1. */
export const MAX_VERSION = 2n ** 64n - 1n
/** What the server keeps of one address at most by default (its ciphertext); `sluice backup-server --max-copy-bytes`. */
export const DEFAULT_MAX_COPY_BYTES = 1024 * 1024

export type Envelope = {
  format: typeof FORMAT
  /** The owner: the node's address, whose key sealed and signed the copy. */
  address: Address
  /** Grows with every copy the owner makes; the server keeps the highest. */
  version: bigint
  /** iv (12 bytes) || AES-256-GCM ciphertext || tag (16 bytes). */
  ciphertext: Uint8Array
  /** The owner's EIP-191 signature over `signedCopyBytes(address, version, ciphertext)`. */
  signature: Hex
}

/** The JSON form: what the server stores and serves, byte for byte. */
export type EnvelopeJson = { format: typeof FORMAT; address: Address; version: string; ciphertext: Hex; signature: Hex }

function layout(purpose: number, address: Address, uint64: bigint, tail?: Uint8Array): Uint8Array {
  const out = new Uint8Array(DOMAIN.length + 1 + 20 + 8 + (tail?.length ?? 0))
  out.set(DOMAIN, 0)
  out[DOMAIN.length] = purpose
  out.set(hexToBytes(address), DOMAIN.length + 1)
  new DataView(out.buffer).setBigUint64(DOMAIN.length + 21, uint64)
  if (tail) out.set(tail, DOMAIN.length + 29)
  return out
}

/**
 * AES-GCM's additional data: "sluice-backup/1" || 0x01 || address (20 bytes) || version (uint64 big-endian). A
 * ciphertext decrypts only as the copy of this address at this version: a server cannot pass one owner's copy, or
 * an older version, off under another address or version, even with a signature it somehow had.
 */
export function copyAdditionalData(address: Address, version: bigint): Uint8Array {
  return layout(PURPOSE_COPY, address, version)
}

/** What the owner signs (EIP-191): the additional data, then keccak256(ciphertext). 76 bytes. */
export function signedCopyBytes(address: Address, version: bigint, ciphertext: Uint8Array): Uint8Array {
  return layout(PURPOSE_COPY, address, version, keccak256Bytes(ciphertext))
}

/** What the owner signs (EIP-191) to fetch its copy: "sluice-backup/1" || 0x02 || address || unix seconds (uint64 big-endian). */
export function signedFetchBytes(address: Address, unixSeconds: bigint): Uint8Array {
  return layout(PURPOSE_FETCH, address, unixSeconds)
}

export function envelopeToJson(envelope: Envelope): EnvelopeJson {
  return {
    format: FORMAT,
    address: envelope.address,
    version: envelope.version.toString(),
    ciphertext: bytesToHex(envelope.ciphertext),
    signature: envelope.signature,
  }
}

const FIELDS = ['format', 'address', 'version', 'ciphertext', 'signature'] as const
const DECIMAL = /^(0|[1-9][0-9]{0,19})$/
const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/

const malformed = (what: string) => new BackupMalformedError(`not a backup copy: ${what}`)

/**
 * Reads a copy's JSON form strictly (every field, nothing else); checks its shape, not its signature
 * (`verifyEnvelope` does). A missing signature is BACKUP_UNSIGNED, anything else wrong BACKUP_MALFORMED.
 */
export function parseEnvelope(value: unknown): Envelope {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw malformed('not a JSON object')
  const o = value as Record<string, unknown>
  const unknown = Object.keys(o).find((k) => !(FIELDS as readonly string[]).includes(k))
  if (unknown !== undefined) throw malformed(`unknown field ${JSON.stringify(unknown)}`)
  if (o.format !== FORMAT) throw malformed(`format must be ${JSON.stringify(FORMAT)}, got ${JSON.stringify(o.format)}`)
  if (typeof o.address !== 'string' || !isAddress(o.address, { strict: false }) || getAddress(o.address) !== o.address)
    throw malformed('address must be an EIP-55 checksummed address')
  if (typeof o.version !== 'string' || !DECIMAL.test(o.version)) throw malformed('version must be a decimal string')
  const version = BigInt(o.version)
  if (version < 1n || version > MAX_VERSION) throw malformed(`version must be from 1 to ${MAX_VERSION}`)
  if (typeof o.ciphertext !== 'string' || !HEX_BYTES.test(o.ciphertext)) throw malformed('ciphertext must be 0x-prefixed hex bytes')
  const ciphertext = hexToBytes(o.ciphertext as Hex)
  if (ciphertext.length < MIN_CIPHERTEXT_BYTES) throw malformed(`ciphertext must hold at least ${MIN_CIPHERTEXT_BYTES} bytes (IV and tag)`)
  if (o.signature === undefined || o.signature === null) throw new BackupUnsignedError('the copy carries no signature: its owner must sign it')
  if (typeof o.signature !== 'string' || !/^0x[0-9a-fA-F]{130}$/.test(o.signature)) throw malformed('signature must be 65 bytes of 0x-prefixed hex')
  return { format: FORMAT, address: o.address as Address, version, ciphertext, signature: o.signature.toLowerCase() as Hex }
}
