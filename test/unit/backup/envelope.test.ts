import { gcm } from '@noble/ciphers/aes'
import { hkdf } from '@noble/hashes/hkdf'
import { sha256 } from '@noble/hashes/sha2'
import { keccak_256 } from '@noble/hashes/sha3'
import fc from 'fast-check'
import { bytesToHex, concatBytes, getAddress, hexToBytes, numberToBytes, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { backupKey, envelopeToJson, MAX_VERSION, open, parseEnvelope, seal, verifyEnvelope, type BackupKey, type Envelope } from '../../../src/backup/index.ts'
import { signedCopyBytes, signedFetchBytes } from '../../../src/backup/format.ts'
import { wasmOrJsSecp256k1 } from '../../../src/crypto/curveEngines.ts'
import { signPackedSync } from '../../../src/protocol/signature.ts'
import { codeOf } from '../../support/errorCode.ts'

// Thousands of recoveries below: libsecp256k1 in WASM, as in the page's worker.
const curve = await wasmOrJsSecp256k1()

const keyA = '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba' as const
const keyB = '0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318' as const
const owner = await backupKey(curve, keyA)
const other = await backupKey(curve, keyB)
const utf8 = (s: string) => new TextEncoder().encode(s)

/** The copy as its owner would have signed it with these fields: a valid signature over changed content. */
function resigned(key: BackupKey, envelope: Envelope, change: Partial<Pick<Envelope, 'version' | 'ciphertext'>>): Envelope {
  const next = { ...envelope, ...change }
  return { ...next, signature: signPackedSync(curve, key.privateKey, signedCopyBytes(next.address, next.version, next.ciphertext)) }
}

function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = bytes.slice()
  out[bit >> 3]! ^= 1 << (bit & 7)
  return out
}

describe('a sealed copy', () => {
  test('opens with its owner key to the payload and version sealed, also after a trip through its JSON', async () => {
    const payload = utf8('channels, balance proofs, secrets')
    const envelope = await seal(owner, { version: 7n, payload })
    expect(envelope).toMatchObject({ format: 'sluice-backup/1', address: owner.address, version: 7n })
    expect(envelope.ciphertext.length).toBe(12 + payload.length + 16)
    expect(verifyEnvelope(curve, envelope)).toBe(owner.address)
    expect(await open(owner, envelope)).toEqual({ version: 7n, payload })
    const json = JSON.parse(JSON.stringify(envelopeToJson(envelope)))
    expect(json).toEqual({
      format: 'sluice-backup/1',
      address: owner.address,
      version: '7',
      ciphertext: expect.stringMatching(/^0x[0-9a-f]+$/),
      signature: expect.stringMatching(/^0x[0-9a-f]{130}$/),
    })
    expect(await open(owner, parseEnvelope(json))).toEqual({ version: 7n, payload })
    // Each copy draws its own IV: the same payload twice gives two ciphertexts.
    expect((await seal(owner, { version: 7n, payload })).ciphertext).not.toEqual(envelope.ciphertext)
  })

  test('is what the decision says, byte for byte: HKDF-SHA256, AES-256-GCM with the address and version as additional data, EIP-191 over the fixed layout', async () => {
    const iv = hexToBytes('0x000102030405060708090a0b')
    const payload = utf8('payload')
    const version = 0x0102030405060708n
    const envelope = await seal(owner, { version, payload, iv })
    // An independent implementation of the format (noble's HKDF and AES-GCM, viem's EIP-191).
    const aesKey = hkdf(sha256, hexToBytes(keyA), new Uint8Array(0), utf8('sluice-backup/1 aes-256-gcm'), 32)
    const additionalData = concatBytes([utf8('sluice-backup/1'), new Uint8Array([1]), hexToBytes(owner.address), numberToBytes(version, { size: 8 })])
    const expected = concatBytes([iv, gcm(aesKey, iv, additionalData).encrypt(payload)])
    expect(bytesToHex(envelope.ciphertext)).toBe(bytesToHex(expected))
    const signed = concatBytes([additionalData, keccak_256(expected)])
    expect(signed.length).toBe(76)
    expect(envelope.signature).toBe(await privateKeyToAccount(keyA).signMessage({ message: { raw: signed } }))
    // The fetch request's layout: the same opening with purpose 2, then the time.
    expect(bytesToHex(signedFetchBytes(owner.address, 1_700_000_000n))).toBe(
      bytesToHex(concatBytes([utf8('sluice-backup/1'), new Uint8Array([2]), hexToBytes(owner.address), numberToBytes(1_700_000_000n, { size: 8 })])),
    )
  })

  test('a flipped bit in any part (address, version, IV, ciphertext, tag, signature) is refused, by the server check and by open', async () => {
    const envelope = await seal(owner, { version: 1000n, payload: utf8('x'.repeat(40)) })
    const parts: [string, number, (bit: number) => Envelope][] = [
      ['address', 160, (bit) => ({ ...envelope, address: getAddress(bytesToHex(flipBit(hexToBytes(envelope.address), bit))) as Address })],
      ['version', 64, (bit) => ({ ...envelope, version: envelope.version ^ (1n << BigInt(bit)) })],
      ['ciphertext', envelope.ciphertext.length * 8, (bit) => ({ ...envelope, ciphertext: flipBit(envelope.ciphertext, bit) })],
      ['signature', 65 * 8, (bit) => ({ ...envelope, signature: bytesToHex(flipBit(hexToBytes(envelope.signature), bit)) as Hex })],
    ]
    for (const [part, bits, flipped] of parts) {
      // Every bit of the short parts; of the ciphertext, every bit of its IV, its first and last bytes and its tag.
      for (let bit = 0; bit < bits; bit++) {
        if (part === 'ciphertext' && bit >= 13 * 8 && bit < bits - 17 * 8) continue
        const copy = flipped(bit)
        if (part === 'version' && copy.version === 0n) continue
        expect(await codeOf(() => verifyEnvelope(curve, copy)), `${part} bit ${bit}`).toBe('BACKUP_BAD_SIGNATURE')
        expect(await codeOf(() => open(owner, copy)), `${part} bit ${bit}`).toBe(part === 'address' ? 'BACKUP_OTHER_OWNER' : 'BACKUP_BAD_SIGNATURE')
      }
    }
    expect(await open(owner, envelope)).toMatchObject({ version: 1000n })
  })

  test("what the owner's own signature covers cannot be passed off either: a changed ciphertext or version, signed again, does not decrypt", async () => {
    const envelope = await seal(owner, { version: 5n, payload: utf8('state at 5') })
    // The owner's key signing other content is a valid signature, so only the cipher can tell.
    const changedCiphertext = resigned(owner, envelope, { ciphertext: flipBit(envelope.ciphertext, 12 * 8 + 3) })
    expect(verifyEnvelope(curve, changedCiphertext)).toBe(owner.address)
    expect(await codeOf(() => open(owner, changedCiphertext))).toBe('BACKUP_TAMPERED')
    // An old copy presented as a newer version: the version is in the additional data.
    const renumbered = resigned(owner, envelope, { version: 6n })
    expect(verifyEnvelope(curve, renumbered)).toBe(owner.address)
    expect(await codeOf(() => open(owner, renumbered))).toBe('BACKUP_TAMPERED')
  })

  test('another key cannot open it, and cannot make it its own', async () => {
    const envelope = await seal(owner, { version: 3n, payload: utf8("A's state") })
    expect(await codeOf(() => open(other, envelope))).toBe('BACKUP_OTHER_OWNER')
    // B takes A's ciphertext and signs it as its own copy: the server would accept it as B's, but it opens for no one.
    const taken: Envelope = {
      ...envelope,
      address: other.address,
      signature: signPackedSync(curve, keyB, signedCopyBytes(other.address, 3n, envelope.ciphertext)),
    }
    expect(verifyEnvelope(curve, taken)).toBe(other.address)
    expect(await codeOf(() => open(other, taken))).toBe('BACKUP_TAMPERED')
    expect(await codeOf(() => open(owner, taken))).toBe('BACKUP_OTHER_OWNER')
    // B's cipher key with A's address (as if B guessed where A's copies are): the tag fails.
    expect(await codeOf(() => open({ ...other, address: owner.address, privateKey: keyA }, envelope))).toBe('BACKUP_TAMPERED')
  })

  test("the server's check accepts exactly the owner's signature over this copy", async () => {
    const envelope = await seal(owner, { version: 9n, payload: utf8('p') })
    const bytes = signedCopyBytes(owner.address, 9n, envelope.ciphertext)
    expect(verifyEnvelope(curve, envelope)).toBe(owner.address)
    // The same bytes signed by another key, and the owner's signature over other bytes (a fetch request), are refused.
    expect(await codeOf(() => verifyEnvelope(curve, { ...envelope, signature: signPackedSync(curve, keyB, bytes) }))).toBe('BACKUP_BAD_SIGNATURE')
    expect(await codeOf(() => verifyEnvelope(curve, { ...envelope, signature: signPackedSync(curve, keyA, signedFetchBytes(owner.address, 9n)) }))).toBe(
      'BACKUP_BAD_SIGNATURE',
    )
    // A signature from which no key can be recovered (r = s = 0).
    expect(await codeOf(() => verifyEnvelope(curve, { ...envelope, signature: `0x${'00'.repeat(64)}1b` }))).toBe('BACKUP_BAD_SIGNATURE')
    // viem's signature of the layout (any EIP-191 signer of the owner's key) is accepted.
    const viaViem = await privateKeyToAccount(keyA).signMessage({ message: { raw: bytes } })
    expect(verifyEnvelope(curve, { ...envelope, signature: viaViem })).toBe(owner.address)
  })

  test('any payload and version round-trip, and a flipped bit anywhere in the copy is refused (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), fc.bigInt({ min: 1n, max: MAX_VERSION }), fc.nat(), async (payload, version, where) => {
        const envelope = await seal(owner, { version, payload })
        const json = JSON.parse(JSON.stringify(envelopeToJson(envelope)))
        expect(await open(owner, parseEnvelope(json))).toEqual({ version, payload })
        // One bit of the signed content: version (64 bits), ciphertext, or signature.
        const bits = 64 + envelope.ciphertext.length * 8 + 65 * 8
        const bit = where % bits
        const copy =
          bit < 64
            ? { ...envelope, version: version ^ (1n << BigInt(bit)) }
            : bit < 64 + envelope.ciphertext.length * 8
              ? { ...envelope, ciphertext: flipBit(envelope.ciphertext, bit - 64) }
              : { ...envelope, signature: bytesToHex(flipBit(hexToBytes(envelope.signature), bit - 64 - envelope.ciphertext.length * 8)) as Hex }
        if (copy.version === 0n) return
        expect(await codeOf(() => open(owner, copy))).toBe('BACKUP_BAD_SIGNATURE')
      }),
      { numRuns: 150 },
    )
  })

  test('seal refuses a version outside 1 .. 2^64 - 1', async () => {
    expect(await codeOf(() => seal(owner, { version: 0n, payload: new Uint8Array() }))).toBe('BACKUP_MALFORMED')
    expect(await codeOf(() => seal(owner, { version: 2n ** 64n, payload: new Uint8Array() }))).toBe('BACKUP_MALFORMED')
    expect((await seal(owner, { version: MAX_VERSION, payload: new Uint8Array() })).version).toBe(MAX_VERSION)
  })
})

const valid = envelopeToJson(await seal(owner, { version: 2n, payload: utf8('p') }))

describe('parseEnvelope', () => {
  test('reads the JSON form strictly: every field, of its type, and nothing else', async () => {
    expect(parseEnvelope(valid).address).toBe(owner.address)
    const cases: [unknown, string][] = [
      [null, 'BACKUP_MALFORMED'],
      [[valid], 'BACKUP_MALFORMED'],
      ['{}', 'BACKUP_MALFORMED'],
      [{ ...valid, extra: 1 }, 'BACKUP_MALFORMED'],
      [{ ...valid, format: 'sluice-backup/2' }, 'BACKUP_MALFORMED'],
      [{ ...valid, address: valid.address.toLowerCase() }, 'BACKUP_MALFORMED'],
      [{ ...valid, address: '0x1234' }, 'BACKUP_MALFORMED'],
      [{ ...valid, version: 2 }, 'BACKUP_MALFORMED'],
      [{ ...valid, version: '0' }, 'BACKUP_MALFORMED'],
      [{ ...valid, version: '02' }, 'BACKUP_MALFORMED'],
      [{ ...valid, version: '-1' }, 'BACKUP_MALFORMED'],
      [{ ...valid, version: (2n ** 64n).toString() }, 'BACKUP_MALFORMED'],
      [{ ...valid, ciphertext: `0x${'00'.repeat(27)}` }, 'BACKUP_MALFORMED'],
      [{ ...valid, ciphertext: valid.ciphertext.slice(0, -1) }, 'BACKUP_MALFORMED'],
      [{ ...valid, ciphertext: valid.ciphertext.slice(2) }, 'BACKUP_MALFORMED'],
      [{ ...valid, signature: valid.signature.slice(0, -2) }, 'BACKUP_MALFORMED'],
      [{ ...valid, signature: 42 }, 'BACKUP_MALFORMED'],
      [{ ...valid, signature: undefined }, 'BACKUP_UNSIGNED'],
      [{ ...valid, signature: null }, 'BACKUP_UNSIGNED'],
    ]
    for (const [value, code] of cases) expect(await codeOf(() => parseEnvelope(value)), JSON.stringify(value)?.slice(0, 80)).toBe(code)
  })

  test('never throws anything but its coded errors, whatever JSON it is given (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        try {
          parseEnvelope(value)
        } catch (e) {
          expect(['BACKUP_MALFORMED', 'BACKUP_UNSIGNED']).toContain((e as { code?: string }).code)
        }
      }),
    )
  })

  test('a fresh key seals copies another fresh key cannot open (a second pair of keys)', async () => {
    const [a, b] = await Promise.all([backupKey(curve, generatePrivateKey()), backupKey(curve, generatePrivateKey())])
    const envelope = await seal(a, { version: 1n, payload: utf8('a') })
    expect(await codeOf(() => open(b, envelope))).toBe('BACKUP_OTHER_OWNER')
    expect(await codeOf(() => open({ ...b, address: a.address }, envelope))).toBe('BACKUP_TAMPERED')
  })
})
