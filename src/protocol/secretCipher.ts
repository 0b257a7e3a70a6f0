import { gcm } from '@noble/ciphers/aes'
import { hkdf } from '@noble/hashes/hkdf'
import { sha256 } from '@noble/hashes/sha2'
import { bytesToHex, hexToBytes, type Hex } from 'viem'
import type { Secp256k1Engine } from './secp256k1.ts'

/**
 * The payment secret an initiator puts in a LockedTransfer's `metadata.secret`, encrypted to the target, so the
 * target needs no SecretRequest / RevealSecret round trip with the initiator (docs/protocol.md §3.9).
 *
 * The format is the Raiden light client's (raiden-ts `transfers/utils.ts`: `metadataFromPaths` encrypts with
 * `eciesjs.encrypt(targetPubkey, jsonStringify({secret, amount, payment_identifier}))`, and
 * `decryptSecretFromMetadata` reverses it), i.e. eciesjs's default ECIES on secp256k1:
 *
 *   ciphertext = ephemeralPublicKey (65 bytes, uncompressed 0x04 || x || y)
 *             || nonce (16 bytes) || tag (16 bytes) || AES-256-GCM(key, nonce, plaintext)
 *   key        = HKDF-SHA256(ikm = ephemeralPublicKey || ECDH point (65 bytes, uncompressed), no salt, no info, 32 bytes)
 *   plaintext  = UTF-8 JSON {"secret":"0x…","amount":"<decimal>","payment_identifier":"<decimal>"}
 *
 * Pure and synchronous: the caller brings the randomness (ephemeral key, nonce), so the same inputs give the same
 * ciphertext. The curve arithmetic goes through the engine the caller gives (native or WASM where loaded: noble's
 * ECDH costs about 10 ms here, which would cost more than the messages it saves).
 */
export type SecretPayload = {
  secret: Hex
  /** What the target is promised: the lock it receives must be at least this. */
  amount: bigint
  paymentId?: bigint
}

const EPHEMERAL_KEY_BYTES = 65
const NONCE_BYTES = 16
const TAG_BYTES = 16

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** 64-byte x || y (as recovered from a signature) or a SEC1 key (33 or 65 bytes) → a curve point's bytes. */
function pointBytes(publicKey: Uint8Array): Uint8Array {
  if (publicKey.length !== 64) return publicKey
  const sec1 = new Uint8Array(65)
  sec1[0] = 4
  sec1.set(publicKey, 1)
  return sec1
}

function sharedKey(ephemeralPublicKey: Uint8Array, sharedPoint: Uint8Array): Uint8Array {
  const master = new Uint8Array(ephemeralPublicKey.length + sharedPoint.length)
  master.set(ephemeralPublicKey, 0)
  master.set(sharedPoint, ephemeralPublicKey.length)
  return hkdf(sha256, master, undefined, undefined, 32)
}

/** The AES key an ephemeral key shares with a receiver (eciesjs `PrivateKey.encapsulate`). */
export function encapsulate(curve: Secp256k1Engine, ephemeralPrivateKey: Uint8Array, receiverPublicKey: Uint8Array): Uint8Array {
  return sharedKey(curve.publicKey(ephemeralPrivateKey), curve.multiply(pointBytes(receiverPublicKey), ephemeralPrivateKey))
}

/** eciesjs's symmetric layer: AES-256-GCM, out = nonce (16) || tag (16) || ciphertext. */
export function sealAes(key: Uint8Array, nonce: Uint8Array, plaintext: Uint8Array): Uint8Array {
  if (nonce.length !== NONCE_BYTES) throw new Error(`the nonce must be ${NONCE_BYTES} bytes`)
  const sealed = gcm(key, nonce).encrypt(plaintext) // ciphertext || tag
  const out = new Uint8Array(NONCE_BYTES + sealed.length)
  out.set(nonce, 0)
  out.set(sealed.subarray(sealed.length - TAG_BYTES), NONCE_BYTES)
  out.set(sealed.subarray(0, sealed.length - TAG_BYTES), NONCE_BYTES + TAG_BYTES)
  return out
}

/** Reverses `sealAes`; throws if the tag does not verify. */
export function openAes(key: Uint8Array, data: Uint8Array): Uint8Array {
  if (data.length < NONCE_BYTES + TAG_BYTES) throw new Error('too short')
  const encrypted = data.subarray(NONCE_BYTES + TAG_BYTES)
  const sealed = new Uint8Array(encrypted.length + TAG_BYTES)
  sealed.set(encrypted, 0)
  sealed.set(data.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES), encrypted.length)
  return gcm(key, data.subarray(0, NONCE_BYTES)).decrypt(sealed)
}

export type EncryptSecretParameters = {
  payload: SecretPayload
  /** The target's public key: 64 bytes x || y, or SEC1 (33 or 65 bytes). */
  targetPublicKey: Uint8Array
  /** A fresh random secp256k1 private key, used once. */
  ephemeralPrivateKey: Uint8Array
  /** 16 fresh random bytes. */
  nonce: Uint8Array
}

/** ECIES-encrypts the payment secret to the target, in the light client's format; returns 0x-hex. */
export function encryptSecret(curve: Secp256k1Engine, { payload, targetPublicKey, ephemeralPrivateKey, nonce }: EncryptSecretParameters): Hex {
  const plaintext = encoder.encode(
    JSON.stringify({
      secret: payload.secret,
      amount: payload.amount.toString(),
      ...(payload.paymentId !== undefined ? { payment_identifier: payload.paymentId.toString() } : {}),
    }),
  )
  const ephemeralPublicKey = curve.publicKey(ephemeralPrivateKey)
  const key = sharedKey(ephemeralPublicKey, curve.multiply(pointBytes(targetPublicKey), ephemeralPrivateKey))
  const sealed = sealAes(key, nonce, plaintext)
  const out = new Uint8Array(EPHEMERAL_KEY_BYTES + sealed.length)
  out.set(ephemeralPublicKey, 0)
  out.set(sealed, EPHEMERAL_KEY_BYTES)
  return bytesToHex(out)
}

const isHex32 = (v: unknown): v is Hex => typeof v === 'string' && /^0x[0-9a-fA-F]{64}$/.test(v)

function uint(v: unknown): bigint | undefined {
  if (typeof v === 'string' && /^[0-9]{1,78}$/.test(v)) return BigInt(v)
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v)
  return undefined
}

/**
 * Decrypts `metadata.secret` with our private key. Undefined when it is not for us, was tampered with, or does not
 * hold a well-formed payload; never throws. The caller still checks the secret against the lock.
 */
export function decryptSecret(curve: Secp256k1Engine, ciphertext: string, privateKey: Uint8Array): SecretPayload | undefined {
  try {
    if (!/^0x[0-9a-fA-F]*$/.test(ciphertext)) return undefined
    const data = hexToBytes(ciphertext as Hex)
    if (data.length < EPHEMERAL_KEY_BYTES + NONCE_BYTES + TAG_BYTES) return undefined
    const ephemeralPublicKey = data.subarray(0, EPHEMERAL_KEY_BYTES)
    const key = sharedKey(ephemeralPublicKey, curve.multiply(ephemeralPublicKey, privateKey))
    const parsed: unknown = JSON.parse(decoder.decode(openAes(key, data.subarray(EPHEMERAL_KEY_BYTES))))
    if (typeof parsed !== 'object' || parsed === null) return undefined
    const o = parsed as Record<string, unknown>
    const amount = uint(o.amount)
    if (!isHex32(o.secret) || amount === undefined) return undefined
    const paymentId = o.payment_identifier === undefined || o.payment_identifier === null ? undefined : uint(o.payment_identifier)
    if (paymentId === undefined && o.payment_identifier !== undefined && o.payment_identifier !== null) return undefined
    return { secret: o.secret.toLowerCase() as Hex, amount, ...(paymentId !== undefined ? { paymentId } : {}) }
  } catch {
    return undefined
  }
}
