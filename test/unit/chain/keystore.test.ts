import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { decryptKeystore, encryptKeystore, InvalidKeystoreError, KeystoreError, WrongPasswordError } from '../../../src/chain/keystore.ts'

// The test vectors of the Web3 Secret Storage Definition (ethereum/wiki), password "testpassword".
const PRIVATE_KEY = '0x7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d'
const pbkdf2Vector = {
  crypto: {
    cipher: 'aes-128-ctr',
    cipherparams: { iv: '6087dab2f9fdbbfaddc31a909735c1e6' },
    ciphertext: '5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46',
    kdf: 'pbkdf2',
    kdfparams: { c: 262144, dklen: 32, prf: 'hmac-sha256', salt: 'ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd' },
    mac: '517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2',
  },
  id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
  version: 3,
}
const scryptVector = {
  crypto: {
    cipher: 'aes-128-ctr',
    cipherparams: { iv: '83dbcc02d8ccb40e466191a123791e0e' },
    ciphertext: 'd172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c',
    kdf: 'scrypt',
    kdfparams: { dklen: 32, n: 262144, r: 1, p: 8, salt: 'ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19' },
    mac: '2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097',
  },
  id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
  version: 3,
}

const withCrypto = (patch: Record<string, unknown>) => ({ ...pbkdf2Vector, crypto: { ...pbkdf2Vector.crypto, ...patch } })

describe('decryptKeystore', () => {
  test('decrypts the PBKDF2 test vector, as an object or as JSON text', async () => {
    expect(await decryptKeystore(pbkdf2Vector, 'testpassword')).toBe(PRIVATE_KEY)
    expect(await decryptKeystore(JSON.stringify(pbkdf2Vector), 'testpassword')).toBe(PRIVATE_KEY)
  })

  test('decrypts the scrypt test vector', async () => {
    expect(await decryptKeystore(JSON.stringify(scryptVector), 'testpassword')).toBe(PRIVATE_KEY)
  })

  test('reads `Crypto` (old tools) and 0x-prefixed hex', async () => {
    const { crypto, ...rest } = pbkdf2Vector
    const old = { ...rest, Crypto: { ...crypto, ciphertext: `0x${crypto.ciphertext}`, mac: `0x${crypto.mac}` } }
    expect(await decryptKeystore(old, 'testpassword')).toBe(PRIVATE_KEY)
  })

  test('a wrong password fails on the MAC', async () => {
    await expect(decryptKeystore(pbkdf2Vector, 'testpassworD')).rejects.toBeInstanceOf(WrongPasswordError)
    // A changed ciphertext is caught the same way, never decrypted into another key.
    await expect(decryptKeystore(withCrypto({ ciphertext: `6${pbkdf2Vector.crypto.ciphertext.slice(1)}` }), 'testpassword')).rejects.toBeInstanceOf(
      WrongPasswordError,
    )
  })

  test.each([
    ['not JSON', '{"version": 3', /not JSON/],
    ['version 2', { ...pbkdf2Vector, version: 2 }, /version is 2, not 3/],
    ['no crypto', { version: 3 }, /no crypto object/],
    ['another cipher', withCrypto({ cipher: 'aes-128-cbc' }), /unsupported cipher aes-128-cbc/],
    ['another kdf', withCrypto({ kdf: 'argon2' }), /unsupported kdf "argon2"/],
    ['another prf', withCrypto({ kdfparams: { ...pbkdf2Vector.crypto.kdfparams, prf: 'hmac-sha512' } }), /unsupported pbkdf2 prf/],
    ['a short iv', withCrypto({ cipherparams: { iv: 'abcd' } }), /cipherparams\.iv must be 16 bytes of hex/],
    ['bad hex', withCrypto({ mac: 'zz'.repeat(32) }), /mac must be 32 bytes of hex/],
    [
      'scrypt n not a power of two',
      { ...scryptVector, crypto: { ...scryptVector.crypto, kdfparams: { ...scryptVector.crypto.kdfparams, n: 1000 } } },
      /power of two/,
    ],
    [
      'scrypt asking for 4 GiB',
      { ...scryptVector, crypto: { ...scryptVector.crypto, kdfparams: { ...scryptVector.crypto.kdfparams, n: 2 ** 22, r: 8 } } },
      /need more than 1024 MiB/,
    ],
    ['pbkdf2 with 2^40 rounds', withCrypto({ kdfparams: { ...pbkdf2Vector.crypto.kdfparams, c: 2 ** 40 } }), /kdfparams\.c must be an integer/],
  ])('refuses %s with a clear message', async (_, keystore, message) => {
    const error = await decryptKeystore(keystore, 'testpassword').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(InvalidKeystoreError)
    expect((error as Error).message).toMatch(message)
  })

  test('fuzz: any JSON value is refused with a KeystoreError, never another exception', async () => {
    const cheap = { ...pbkdf2Vector.crypto.kdfparams, c: 1 }
    const arbitraryKeystore = fc.oneof(
      fc.jsonValue(),
      fc.record({
        version: fc.oneof(fc.constant(3), fc.jsonValue()),
        crypto: fc.oneof(
          fc.jsonValue(),
          fc.record({
            cipher: fc.constantFrom('aes-128-ctr', 'x'),
            cipherparams: fc.oneof(fc.jsonValue(), fc.record({ iv: fc.string() })),
            ciphertext: fc.oneof(fc.string(), fc.constant(pbkdf2Vector.crypto.ciphertext)),
            kdf: fc.constantFrom('pbkdf2', 'scrypt', 'x'),
            kdfparams: fc.oneof(
              fc.jsonValue(),
              fc.constant(cheap),
              fc.record({ n: fc.integer(), r: fc.integer(), p: fc.integer(), dklen: fc.integer(), salt: fc.string() }),
            ),
            mac: fc.oneof(fc.string(), fc.constant(pbkdf2Vector.crypto.mac)),
          }),
        ),
      }),
    )
    await fc.assert(
      fc.asyncProperty(arbitraryKeystore, fc.string(), async (keystore, password) => {
        const error = await decryptKeystore(keystore, password).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(error).toBeInstanceOf(KeystoreError)
      }),
      { numRuns: 300 },
    )
  })
})

describe('encryptKeystore', () => {
  const cheap = { n: 16, r: 1, p: 1 }

  test("writes geth's standard scrypt cost (N = 2^18, r = 8, p = 1) by default, which decrypts to the same key", async () => {
    const key = generatePrivateKey()
    const keystore = await encryptKeystore(key, 'correct horse')
    expect(keystore.crypto).toMatchObject({ kdf: 'scrypt', kdfparams: { n: 2 ** 18, r: 8, p: 1, dklen: 32 } })
    expect(await decryptKeystore(JSON.stringify(keystore), 'correct horse')).toBe(key)
  })

  test('decrypts with its password only, and carries the address geth writes', async () => {
    const key = generatePrivateKey()
    const keystore = await encryptKeystore(key, 'correct horse', cheap)
    expect(`0x${keystore.address}`).toBe(privateKeyToAddress(key).toLowerCase())
    await expect(decryptKeystore(keystore, 'wrong horse')).rejects.toBeInstanceOf(WrongPasswordError)
  })

  test("still reads what it wrote before (geth's light scrypt, N = 4096, r = 8, p = 6)", async () => {
    const key = generatePrivateKey()
    const keystore = await encryptKeystore(key, '', { n: 4096, r: 8, p: 6 })
    expect(await decryptKeystore(keystore, '')).toBe(key)
  })

  test('writes PBKDF2-HMAC-SHA256 when given rounds: kdf "pbkdf2", prf "hmac-sha256", as geth reads it', async () => {
    const key = generatePrivateKey()
    const keystore = await encryptKeystore(key, 'correct horse', { c: 1000 })
    expect(keystore.crypto).toMatchObject({ kdf: 'pbkdf2', kdfparams: { c: 1000, prf: 'hmac-sha256', dklen: 32 } })
    expect(await decryptKeystore(JSON.stringify(keystore), 'correct horse')).toBe(key)
    await expect(decryptKeystore(keystore, 'wrong horse')).rejects.toBeInstanceOf(WrongPasswordError)
  })

  test('round-trips any key and password, each time with a new salt and iv', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.string(), async (bytes, password) => {
        fc.pre(bytes.some((b) => b !== 0))
        const key = `0x${Buffer.from(bytes).toString('hex')}` as const
        const a = await encryptKeystore(key, password, cheap)
        const b = await encryptKeystore(key, password, cheap)
        expect(a.crypto.kdfparams.salt).not.toBe(b.crypto.kdfparams.salt)
        expect(await decryptKeystore(a, password)).toBe(key)
      }),
      { numRuns: 50 },
    )
  })

  test('refuses a key that is not 32 bytes', async () => {
    await expect(encryptKeystore('0x1234', '', cheap)).rejects.toBeInstanceOf(InvalidKeystoreError)
  })
})
