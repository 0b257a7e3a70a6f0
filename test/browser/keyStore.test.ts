// worker/keyStore.ts in a real Chromium, on the real IndexedDB: what the start-up through startNode does not show
// (host.test.ts has that): a rewrite that fails keeps the first format's record; reading for an export rewrites
// nothing; a first-format key kept with "" and given a passphrase; a damaged record.
import { openDB } from 'idb'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeEach, describe, expect, test } from 'vitest'
import { encryptKeystore, type Keystore } from '../../src/chain/keystore.ts'
import { loadOrCreateKey, openKeys, readStoredKey, replaceRecord, type StoredKey, type WrappedKey } from '../../worker/keyStore.ts'

const FIRST_FORMAT_SCRYPT = { n: 4096, r: 8, p: 6 }

function deleteKeys(): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.deleteDatabase('sluice:keys')
    request.onsuccess = () => resolve()
    request.onerror = () => reject(request.error)
  })
}

async function writeFirstFormat(keystore: Keystore) {
  const db = await openDB('sluice:keys', 1, { upgrade: (db) => void db.createObjectStore('keystores') })
  await db.put('keystores', keystore, 'node')
  db.close()
}

async function records(): Promise<Record<string, unknown[]>> {
  const db = await openDB('sluice:keys')
  try {
    const all: Record<string, unknown[]> = {}
    for (const store of db.objectStoreNames) all[store] = await db.getAll(store)
    return all
  } finally {
    db.close()
  }
}

beforeEach(deleteKeys)
afterAll(deleteKeys)

describe('the first format', () => {
  test('a rewrite that fails leaves its record as it was, and the next start rewrites it', async () => {
    const key = generatePrivateKey()
    const firstFormat = await encryptKeystore(key, '', FIRST_FORMAT_SCRYPT)
    await writeFirstFormat(firstFormat)
    const db = await openKeys()
    try {
      // A record IndexedDB cannot store (a function does not clone): the write fails before anything is removed.
      const unstorable = { kind: 'wrapped', address: privateKeyToAddress(key), cannotClone: () => {} } as unknown as StoredKey
      await expect(replaceRecord(db, unstorable, 'keystores')).rejects.toMatchObject({ name: 'DataCloneError' })
    } finally {
      db.close()
    }
    expect(await records()).toEqual({ keys: [], keystores: [firstFormat] })

    expect(await loadOrCreateKey()).toEqual({ key, created: false })
    expect(await records()).toEqual({ keys: [expect.objectContaining({ kind: 'wrapped' })], keystores: [] })
  })

  test('reading the key for an export leaves the record as it is (only the start that leads rewrites it)', async () => {
    const key = generatePrivateKey()
    const firstFormat = await encryptKeystore(key, 'open sesame', FIRST_FORMAT_SCRYPT)
    await writeFirstFormat(firstFormat)
    expect(await readStoredKey('open sesame')).toBe(key)
    await expect(readStoredKey()).rejects.toMatchObject({ code: 'PASSPHRASE_REQUIRED' })
    expect(await records()).toEqual({ keys: [], keystores: [firstFormat] })
  })

  test('kept with "" and started with a passphrase: the key is protected by it from then on', async () => {
    const key = generatePrivateKey()
    await writeFirstFormat(await encryptKeystore(key, '', FIRST_FORMAT_SCRYPT))
    expect(await loadOrCreateKey('open sesame')).toEqual({ key, created: false })
    expect(await records()).toEqual({ keys: [expect.objectContaining({ kind: 'passphrase' })], keystores: [] })
    await expect(loadOrCreateKey()).rejects.toMatchObject({ code: 'PASSPHRASE_REQUIRED' })
    await expect(loadOrCreateKey('open barley')).rejects.toMatchObject({ code: 'WRONG_PASSWORD' })
  })
})

test('a wrapped record whose bytes changed is refused as damaged (INVALID_KEYSTORE), never read as another key', async () => {
  const { key } = await loadOrCreateKey()
  const db = await openKeys()
  try {
    const record = (await db.get('keys', 'node')) as WrappedKey
    record.ciphertext[0]! ^= 1
    await db.put('keys', record, 'node')
  } finally {
    db.close()
  }
  await expect(loadOrCreateKey()).rejects.toMatchObject({ code: 'INVALID_KEYSTORE', message: expect.stringMatching(/damaged/) })
  expect(key).toMatch(/^0x[0-9a-f]{64}$/)
})
