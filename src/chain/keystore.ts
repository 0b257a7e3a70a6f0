import { SluiceError } from '../errors.ts'
import { scryptAsync } from '@noble/hashes/scrypt'
import { bytesToHex, hexToBytes, keccak256, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'

/**
 * Ethereum JSON keystores, version 3 (the "Web3 Secret Storage" format of geth, Parity and the Raiden node's
 * `--keystore-path`): the private key encrypted with AES-128-CTR under a key derived from the password by scrypt
 * or PBKDF2-HMAC-SHA256, and a MAC that tells a wrong password from a damaged file. viem has no decryption; this
 * uses @noble/hashes for scrypt and WebCrypto for PBKDF2 and AES, so it runs in a browser as well as in Node.
 */

export class KeystoreError extends SluiceError {
  override name: string = 'KeystoreError'
  override readonly code: string = 'KEYSTORE'
}

/** The file is not a keystore this code reads (not JSON, not version 3, an unknown KDF or cipher, bad fields). */
export class InvalidKeystoreError extends KeystoreError {
  override name = 'InvalidKeystoreError' as const
  override readonly code = 'INVALID_KEYSTORE' as const
}

/** The MAC does not match: the password is wrong (or the ciphertext was changed). */
export class WrongPasswordError extends KeystoreError {
  override name = 'WrongPasswordError' as const
  override readonly code = 'WRONG_PASSWORD' as const
  constructor() {
    super('wrong password for the keystore (its MAC does not match)')
  }
}

export type DecryptKeystoreErrorType = InvalidKeystoreError | WrongPasswordError

/**
 * KDF costs above these are refused: a hostile file could otherwise ask for gigabytes of memory or hours of work.
 * geth's "standard" scrypt is N=2^18, r=8, p=1 (256 MiB); PBKDF2 keystores commonly use 262,144 rounds.
 */
const MAX_SCRYPT_MEMORY = 1024 ** 3
const MAX_PBKDF2_ROUNDS = 10_000_000

/** The decrypted 32-byte private key of a version-3 keystore (given as its JSON text or parsed object). */
export async function decryptKeystore(keystore: string | unknown, password: string): Promise<Hex> {
  const parsed = typeof keystore === 'string' ? parseJson(keystore) : keystore
  const { kdf, ciphertext, iv, mac } = readKeystore(parsed)
  const derived = await deriveKey(password, kdf)
  const expected = keccak256(concat(derived.slice(16, 32), ciphertext))
  if (expected.toLowerCase() !== bytesToHex(mac)) throw new WrongPasswordError()
  const key = await crypto.subtle.importKey('raw', derived.slice(0, 16), { name: 'AES-CTR' }, false, ['decrypt'])
  // Ethereum's CTR counter is the whole 16-byte IV, incremented as one 128-bit big-endian number.
  const plain = new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-CTR', counter: iv, length: 128 }, key, ciphertext))
  if (plain.length !== 32) throw new InvalidKeystoreError(`the decrypted key has ${plain.length} bytes, not 32`)
  return bytesToHex(plain)
}

/** scrypt costs: N (a power of two), r, p. */
export type ScryptCost = { n: number; r: number; p: number }
/** PBKDF2-HMAC-SHA256 cost: the number of rounds. */
export type Pbkdf2Cost = { c: number }

/**
 * What a keystore this code writes costs by default: geth's "standard" scrypt (N = 2^18, r = 8, p = 1: 256 MiB; in
 * pure JS about 1.3 s in Node and 4 s in Chromium), what `geth account new` writes. docs/decisions/0027.
 */
export const KEYSTORE_SCRYPT: ScryptCost = { n: 2 ** 18, r: 8, p: 1 }

/**
 * `key` as a version-3 keystore (AES-128-CTR; scrypt, or PBKDF2-HMAC-SHA256 when `cost` gives rounds), readable by
 * geth, the Raiden node and `sluice serve --keystore`. An empty password is allowed: the keystore is then a format,
 * not a protection.
 */
export async function encryptKeystore(key: Hex, password: string, cost: ScryptCost | Pbkdf2Cost = KEYSTORE_SCRYPT): Promise<Keystore> {
  const plain = new Uint8Array(hexToBytes(key))
  if (plain.length !== 32) throw new InvalidKeystoreError(`a private key has 32 bytes, not ${plain.length}`)
  const salt = crypto.getRandomValues(new Uint8Array(32))
  const iv = crypto.getRandomValues(new Uint8Array(16))
  const kdf: Kdf = 'c' in cost ? { name: 'pbkdf2', c: cost.c, dklen: 32, salt } : { name: 'scrypt', n: cost.n, r: cost.r, p: cost.p, dklen: 32, salt }
  const derived = await deriveKey(password, kdf)
  const aes = await crypto.subtle.importKey('raw', derived.slice(0, 16), { name: 'AES-CTR' }, false, ['encrypt'])
  const ciphertext = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-CTR', counter: iv, length: 128 }, aes, plain))
  const strip = (bytes: Uint8Array) => bytesToHex(bytes).slice(2)
  const kdfFields =
    kdf.name === 'pbkdf2'
      ? ({ kdf: 'pbkdf2', kdfparams: { dklen: 32, c: kdf.c, prf: 'hmac-sha256', salt: strip(salt) } } as const)
      : ({ kdf: 'scrypt', kdfparams: { dklen: 32, n: kdf.n, r: kdf.r, p: kdf.p, salt: strip(salt) } } as const)
  return {
    version: 3,
    id: crypto.randomUUID(),
    address: privateKeyToAddress(key).slice(2).toLowerCase(),
    crypto: {
      cipher: 'aes-128-ctr',
      cipherparams: { iv: strip(iv) },
      ciphertext: strip(ciphertext),
      ...kdfFields,
      mac: keccak256(concat(derived.slice(16, 32), ciphertext)).slice(2),
    },
  }
}

async function deriveKey(password: string, kdf: Kdf): Promise<Uint8Array> {
  const passwordBytes = new TextEncoder().encode(password.normalize('NFKC'))
  if (kdf.name === 'scrypt') return scryptAsync(passwordBytes, kdf.salt, { N: kdf.n, r: kdf.r, p: kdf.p, dkLen: kdf.dklen, maxmem: MAX_SCRYPT_MEMORY + 1024 })
  // WebCrypto has PBKDF2 (native, in browsers and Node alike); it has no scrypt, so that one is @noble/hashes.
  const base = await crypto.subtle.importKey('raw', passwordBytes, 'PBKDF2', false, ['deriveBits'])
  return new Uint8Array(await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: kdf.salt, iterations: kdf.c }, base, kdf.dklen * 8))
}

/** A version-3 keystore as this code writes it (JSON.stringify gives the file). */
export type Keystore = {
  version: 3
  id: string
  address: string
  crypto: {
    cipher: 'aes-128-ctr'
    cipherparams: { iv: string }
    ciphertext: string
    mac: string
  } & (
    | { kdf: 'scrypt'; kdfparams: { dklen: number; n: number; r: number; p: number; salt: string } }
    | { kdf: 'pbkdf2'; kdfparams: { dklen: number; c: number; prf: 'hmac-sha256'; salt: string } }
  )
}

type Kdf =
  | { name: 'scrypt'; n: number; r: number; p: number; dklen: number; salt: Uint8Array<ArrayBuffer> }
  | { name: 'pbkdf2'; c: number; dklen: number; salt: Uint8Array<ArrayBuffer> }

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (e) {
    throw new InvalidKeystoreError(`the keystore is not JSON: ${(e as Error).message}`)
  }
}

function readKeystore(value: unknown): { kdf: Kdf; cipher: string; ciphertext: Uint8Array<ArrayBuffer>; iv: Uint8Array<ArrayBuffer>; mac: Uint8Array } {
  const fail = (what: string): never => {
    throw new InvalidKeystoreError(`not a version 3 keystore: ${what}`)
  }
  if (!isRecord(value)) return fail('not a JSON object')
  if (value.version !== 3) fail(`version is ${JSON.stringify(value.version)}, not 3`)
  // geth writes `crypto`; some old tools wrote `Crypto`.
  const c = value.crypto ?? value.Crypto
  if (!isRecord(c)) return fail('no crypto object')
  const cipher = typeof c.cipher === 'string' ? c.cipher : fail('no cipher')
  if (cipher !== 'aes-128-ctr') throw new InvalidKeystoreError(`unsupported cipher ${cipher} (only aes-128-ctr)`)
  const params = isRecord(c.cipherparams) ? c.cipherparams : fail('no cipherparams')
  const iv = hex(params.iv, 'cipherparams.iv', 16)
  const ciphertext = hex(c.ciphertext, 'ciphertext')
  const mac = hex(c.mac, 'mac', 32)
  const kp = isRecord(c.kdfparams) ? c.kdfparams : fail('no kdfparams')
  const int = (v: unknown, name: string, min: number, max: number) =>
    Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max ? (v as number) : fail(`kdfparams.${name} must be an integer from ${min} to ${max}`)
  const dklen = int(kp.dklen, 'dklen', 32, 64)
  const salt = hex(kp.salt, 'kdfparams.salt')
  let kdf: Kdf
  if (c.kdf === 'scrypt') {
    const n = int(kp.n, 'n', 2, 2 ** 30)
    if ((n & (n - 1)) !== 0) fail('kdfparams.n must be a power of two')
    const r = int(kp.r, 'r', 1, 1024)
    const p = int(kp.p, 'p', 1, 1024)
    if (128 * n * r > MAX_SCRYPT_MEMORY) throw new InvalidKeystoreError(`the keystore's scrypt parameters need more than ${MAX_SCRYPT_MEMORY / 1024 ** 2} MiB`)
    kdf = { name: 'scrypt', n, r, p, dklen, salt }
  } else if (c.kdf === 'pbkdf2') {
    if (kp.prf !== 'hmac-sha256') throw new InvalidKeystoreError(`unsupported pbkdf2 prf ${JSON.stringify(kp.prf)} (only hmac-sha256)`)
    kdf = { name: 'pbkdf2', c: int(kp.c, 'c', 1, MAX_PBKDF2_ROUNDS), dklen, salt }
  } else {
    throw new InvalidKeystoreError(`unsupported kdf ${JSON.stringify(c.kdf)} (scrypt or pbkdf2)`)
  }
  return { kdf, cipher, ciphertext, iv, mac }
}

function hex(value: unknown, name: string, bytes?: number): Uint8Array<ArrayBuffer> {
  if (typeof value !== 'string') throw new InvalidKeystoreError(`not a version 3 keystore: ${name} is missing`)
  const digits = value.startsWith('0x') ? value.slice(2) : value
  if (!/^([0-9a-fA-F]{2})*$/.test(digits) || (bytes !== undefined && digits.length !== bytes * 2)) {
    throw new InvalidKeystoreError(`not a version 3 keystore: ${name} must be ${bytes ? `${bytes} bytes of ` : ''}hex`)
  }
  return new Uint8Array(hexToBytes(`0x${digits}`))
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length)
  out.set(a)
  out.set(b, a.length)
  return out
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
