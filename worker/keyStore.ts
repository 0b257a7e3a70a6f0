/**
 * The node's key when the page gives none: generated on the first start and kept in IndexedDB as an Ethereum v3
 * keystore (database `sluice:keys`), encrypted with the page's passphrase (an empty one when it gives none, which
 * makes the keystore a format rather than a protection). The same file works with `sluice serve --keystore`.
 * Only the tab that leads runs this (docs/decisions/0020), so two tabs never generate two keys.
 */
import { openDB } from 'idb'
import type { Hex } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { decryptKeystore, encryptKeystore, type Keystore } from '../src/chain/keystore.ts'
import { SluiceError } from '../src/errors.ts'

const DB_NAME = 'sluice:keys'
const STORE = 'keystores'
/** One node per origin, so one key. */
const NODE_KEY = 'node'

/** The stored keystore is encrypted and the page gave no passphrase. */
export class PassphraseRequiredError extends SluiceError {
  override name = 'PassphraseRequiredError' as const
  override readonly code = 'PASSPHRASE_REQUIRED' as const
}

/** The key this origin's node uses: decrypted from the stored keystore, or generated and stored now. */
export async function loadOrCreateKey(passphrase = ''): Promise<{ key: Hex; keystore: Keystore; created: boolean }> {
  const db = await openKeys()
  try {
    const stored = (await db.get(STORE, NODE_KEY)) as Keystore | undefined
    if (stored) {
      try {
        return { key: await decryptKeystore(stored, passphrase), keystore: stored, created: false }
      } catch (e) {
        if (passphrase === '' && (e as { code?: string }).code === 'WRONG_PASSWORD')
          throw new PassphraseRequiredError('the stored key is encrypted: give startNode() its passphrase', { cause: e })
        throw e
      }
    }
    const key = generatePrivateKey()
    const keystore = await encryptKeystore(key, passphrase)
    // `add`, not `put`: a keystore written meanwhile is never overwritten (the transaction fails instead).
    await db.add(STORE, keystore, NODE_KEY)
    return { key, keystore, created: true }
  } finally {
    db.close()
  }
}

/** The stored keystore, if the node's key was generated here. */
export async function storedKeystore(): Promise<Keystore | undefined> {
  const db = await openKeys()
  try {
    return (await db.get(STORE, NODE_KEY)) as Keystore | undefined
  } finally {
    db.close()
  }
}

function openKeys() {
  return openDB(DB_NAME, 1, {
    upgrade: (db) => void db.createObjectStore(STORE),
    // Held only for one read or write; another connection's upgrade or deletion need not wait for more.
    blocking: (_current, _next, event) => (event.target as IDBDatabase).close(),
  })
}
