/**
 * The node's key when the page gives none (docs/decisions/0027): generated on the first start and kept in IndexedDB
 * (database `sluice:keys`, store `keys`, record `node`), never in clear and never as a keystore that "" opens:
 *   - without a passphrase, encrypted (AES-GCM-256) under a non-extractable WebCrypto key kept in the same record;
 *   - with one, as a v3 keystore with PBKDF2-HMAC-SHA256 at 600,000 rounds (native WebCrypto: a start-up unlocks it
 *     in a fraction of a second, where scrypt in pure JS at a comparable strength takes seconds).
 * A record of the first format (store `keystores`: a v3 keystore with scrypt N = 4096, encrypted with the passphrase
 * or with "") is rewritten in this one by the start that reads it. Only the tab that leads runs this (decision 0020),
 * so two tabs never generate or rewrite a key at once.
 */
import { openDB, type IDBPDatabase } from 'idb'
import { hexToBytes, toHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { decryptKeystore, encryptKeystore, InvalidKeystoreError, type Keystore, type Pbkdf2Cost } from '../src/chain/keystore.ts'
import { SluiceError } from '../src/errors.ts'

const DB_NAME = 'sluice:keys'
const DB_VERSION = 2
/** The records of this format. */
const KEYS = 'keys'
/** The first format's store: read once, to rewrite what it holds. */
const OLD_KEYSTORES = 'keystores'
/** One node per origin, so one key. */
const NODE_KEY = 'node'

/**
 * What a passphrase costs at every start: OWASP's figure for PBKDF2-HMAC-SHA256 (Password Storage Cheat Sheet, 2023),
 * a v3 keystore's `pbkdf2` with `hmac-sha256`. Decision 0027 has the measurements against scrypt.
 */
export const PASSPHRASE_PBKDF2: Pbkdf2Cost = { c: 600_000 }

/** The key without a passphrase: AES-GCM under `wrappingKey`, which WebCrypto never gives out (`extractable: false`). */
export type WrappedKey = {
  kind: 'wrapped'
  address: Address
  wrappingKey: CryptoKey
  iv: Uint8Array<ArrayBuffer>
  ciphertext: Uint8Array<ArrayBuffer>
}
/** The key behind the page's passphrase: a v3 keystore (PBKDF2-HMAC-SHA256), as geth reads it. */
export type PassphraseKey = { kind: 'passphrase'; address: Address; keystore: Keystore }
export type StoredKey = WrappedKey | PassphraseKey

/** The stored key is behind a passphrase and the page gave none. */
export class PassphraseRequiredError extends SluiceError {
  override name = 'PassphraseRequiredError' as const
  override readonly code = 'PASSPHRASE_REQUIRED' as const
}

/**
 * The key this origin's node uses: unlocked from the stored record, or generated and stored now. A record of the
 * first format, or one kept with less than what `passphrase` asks, is rewritten now. A passphrase given for a key
 * kept without one protects it from then on (a passphrase is never dropped this way: without it, a protected key
 * is PASSPHRASE_REQUIRED).
 */
export async function loadOrCreateKey(passphrase = ''): Promise<{ key: Hex; created: boolean }> {
  const db = await openKeys()
  try {
    const stored = await readRecord(db)
    if (!stored) {
      const key = generatePrivateKey()
      // `add`, not `put`: a record written meanwhile is never overwritten (the transaction fails instead).
      await db.add(KEYS, await seal(key, passphrase), NODE_KEY)
      return { key, created: true }
    }
    const key = stored.from === KEYS ? await unlock(stored.record, passphrase) : await unlockFirstFormat(stored.record, passphrase)
    if (stored.from === OLD_KEYSTORES || !isCurrent(stored.record, passphrase)) await replaceRecord(db, await seal(key, passphrase), stored.from)
    return { key, created: false }
  } finally {
    db.close()
  }
}

/** The stored key, unlocked and left as it is stored (undefined when there is none): what a tab that does not lead exports. */
export async function readStoredKey(passphrase = ''): Promise<Hex | undefined> {
  const db = await openKeys()
  try {
    const stored = await readRecord(db)
    if (!stored) return undefined
    return stored.from === KEYS ? await unlock(stored.record, passphrase) : await unlockFirstFormat(stored.record, passphrase)
  } finally {
    db.close()
  }
}

/**
 * Writes `next` in place of the record read from `from`, in one transaction: the new record first, then the first
 * format's removal. A failure at any point aborts the transaction, so the key is never without a record.
 */
export async function replaceRecord(db: IDBPDatabase, next: StoredKey, from: typeof KEYS | typeof OLD_KEYSTORES): Promise<void> {
  const tx = db.transaction(from === KEYS ? [KEYS] : [KEYS, OLD_KEYSTORES], 'readwrite')
  // Awaited below; when a request fails first, its error is the one thrown and the abort's is dropped here.
  tx.done.catch(() => {})
  try {
    // From the first format: `add`, so that a record of this format, if one came meanwhile, is never overwritten.
    if (from === KEYS) await tx.objectStore(KEYS).put(next, NODE_KEY)
    else {
      await tx.objectStore(KEYS).add(next, NODE_KEY)
      await tx.objectStore(OLD_KEYSTORES).delete(NODE_KEY)
    }
    await tx.done
  } catch (e) {
    try {
      tx.abort()
    } catch {
      // Already aborted by the failed request.
    }
    throw e
  }
}

/** Opens `sluice:keys`, creating or upgrading its stores (the first format's store stays until its record moves). */
export function openKeys(): Promise<IDBPDatabase> {
  return openDB(DB_NAME, DB_VERSION, {
    upgrade: (db) => {
      if (!db.objectStoreNames.contains(KEYS)) db.createObjectStore(KEYS)
    },
    // Held only for one read or write; another connection's upgrade or deletion need not wait for more.
    blocking: (_current, _next, event) => (event.target as IDBDatabase).close(),
  })
}

type Found = { from: typeof KEYS; record: StoredKey } | { from: typeof OLD_KEYSTORES; record: Keystore }

async function readRecord(db: IDBPDatabase): Promise<Found | undefined> {
  const record = (await db.get(KEYS, NODE_KEY)) as StoredKey | undefined
  if (record) return { from: KEYS, record }
  if (!db.objectStoreNames.contains(OLD_KEYSTORES)) return undefined
  const old = (await db.get(OLD_KEYSTORES, NODE_KEY)) as Keystore | undefined
  return old ? { from: OLD_KEYSTORES, record: old } : undefined
}

/** The record for `key`: wrapped without a passphrase, a PBKDF2 keystore with one. */
async function seal(key: Hex, passphrase: string): Promise<StoredKey> {
  const address = privateKeyToAddress(key)
  if (passphrase !== '') return { kind: 'passphrase', address, keystore: await encryptKeystore(key, passphrase, PASSPHRASE_PBKDF2) }
  const wrappingKey = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const ciphertext = new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: boundTo(address) }, wrappingKey, new Uint8Array(hexToBytes(key))),
  )
  return { kind: 'wrapped', address, wrappingKey, iv, ciphertext }
}

async function unlock(record: StoredKey, passphrase: string): Promise<Hex> {
  if (record.kind === 'passphrase') {
    if (passphrase === '') throw new PassphraseRequiredError('the stored key is behind a passphrase: give startNode() its passphrase')
    return checked(await decryptKeystore(record.keystore, passphrase), record.address)
  }
  let plain: ArrayBuffer
  try {
    plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: record.iv, additionalData: boundTo(record.address) }, record.wrappingKey, record.ciphertext)
  } catch (e) {
    throw new InvalidKeystoreError('the stored key does not decrypt with its wrapping key: its record is damaged', { cause: e })
  }
  return checked(toHex(new Uint8Array(plain)), record.address)
}

/** A keystore of the first format: encrypted with the passphrase, or with "" when the page gave none. */
async function unlockFirstFormat(keystore: Keystore, passphrase: string): Promise<Hex> {
  try {
    return await decryptKeystore(keystore, passphrase)
  } catch (e) {
    if ((e as { code?: string }).code !== 'WRONG_PASSWORD') throw e
    if (passphrase === '') throw new PassphraseRequiredError('the stored key is behind a passphrase: give startNode() its passphrase', { cause: e })
    // A passphrase given for a key kept without one: that key is protected by it from now on (loadOrCreateKey).
    return decryptKeystore(keystore, '').catch(() => Promise.reject(e))
  }
}

/** Whether `record` is what `passphrase` asks for now: wrapped without one; with one, a keystore at today's cost. */
function isCurrent(record: StoredKey, passphrase: string): boolean {
  if (passphrase === '') return true // a wrapped key, or a protected one (which unlock refused without its passphrase)
  return record.kind === 'passphrase' && record.keystore.crypto.kdf === 'pbkdf2' && record.keystore.crypto.kdfparams.c >= PASSPHRASE_PBKDF2.c
}

function checked(key: Hex, address: Address): Hex {
  if (privateKeyToAddress(key) !== address) throw new InvalidKeystoreError(`the stored key is not the key of ${address}: its record is damaged`)
  return key
}

/** The wrapped bytes are this address's key and nothing else's (AES-GCM's additional data). */
function boundTo(address: Address): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`sluice:node-key:${address}`)
}
