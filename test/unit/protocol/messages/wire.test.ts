import { readdirSync, readFileSync } from 'node:fs'
import fc from 'fast-check'
import { bytesToHex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { InvalidMessageError, InvalidSignatureError } from '../../../../src/protocol/errors.ts'
import { decodeMessage, encodeMessage, readMessage, signMessage, type Message } from '../../../../src/protocol/messages/index.ts'
import { jsSecp256k1 } from '../../../../src/protocol/secp256k1.ts'

const dir = new URL('../../../fixtures/messages/', import.meta.url)
const fixtures: { name: string; message: Record<string, unknown>; signer: `0x${string}` }[] = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ name: f.replace('.json', ''), ...JSON.parse(readFileSync(new URL(f, dir), 'utf8')) }))
const wire = (name: string) => structuredClone(fixtures.find((f) => f.name === name)!.message)

type Leaf = { path: (string | number)[]; value: unknown }
function leaves(value: unknown, path: (string | number)[] = []): Leaf[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...path, i]))
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]))
  return [{ path, value }]
}
function setAt(root: any, path: (string | number)[], value: unknown) {
  let o = root
  for (const p of path.slice(0, -1)) o = o[p]
  o[path.at(-1)!] = value
}
/** Every checked leaf of a message: the type tag, and metadata (kept as received) aside. */
const fieldLeaves = (m: unknown) => leaves(m).filter((l) => l.path[0] !== 'type' && l.path[0] !== 'metadata' && typeof l.value !== 'boolean')

async function expectRejected(text: string, kind: typeof InvalidMessageError | typeof InvalidSignatureError, sender?: `0x${string}`) {
  await expect(decodeMessage(jsSecp256k1, text, sender)).rejects.toBeInstanceOf(kind)
}

describe('decoding untrusted messages', () => {
  test('refuses text that is not JSON, not an object, or of an unknown type', async () => {
    for (const text of ['', 'nope', '[]', 'null', '42', '{"type":"Ping","signature":"0x"}', '{}']) await expectRejected(text, InvalidMessageError)
  })

  test('refuses a missing field, naming it', async () => {
    for (const f of fixtures) {
      for (const key of Object.keys(f.message).filter((k) => k !== 'type' && k !== 'coop_settle')) {
        const m = structuredClone(f.message)
        delete m[key]
        const error = await decodeMessage(jsSecp256k1, JSON.stringify(m)).catch((e) => e)
        expect(error, `${f.name} without ${key}`).toBeInstanceOf(InvalidMessageError)
        expect(error.field).toContain(key)
      }
    }
  })

  test('refuses each field in a wrong form: negative, fraction, hex number, too long, wrong type', async () => {
    const bad = [-1, 1.5, '-1', '1.5', '0x10', '01', '', null, {}, [], true, `0x${'00'.repeat(33)}`, '1e3', ' 1']
    for (const f of fixtures) {
      for (const leaf of fieldLeaves(f.message)) {
        for (const b of bad) {
          const m = structuredClone(f.message)
          setAt(m, leaf.path, b)
          await expect(decodeMessage(jsSecp256k1, JSON.stringify(m)), `${f.name}.${leaf.path.join('.')} = ${JSON.stringify(b)}`).rejects.toBeInstanceOf(
            InvalidMessageError,
          )
        }
      }
    }
  })

  test('refuses integers above their width: uint64 identifiers and nonces, uint256 amounts', async () => {
    const m = wire('LockedTransfer')
    for (const [field, tooBig] of [
      ['message_identifier', 2n ** 64n],
      ['payment_identifier', 2n ** 64n],
      ['nonce', 2n ** 64n],
      ['transferred_amount', 2n ** 256n],
      ['chain_id', 2n ** 256n],
    ] as const) {
      const mm = { ...m, [field]: tooBig.toString() }
      await expectRejected(JSON.stringify(mm), InvalidMessageError)
      const ok = { ...m, [field]: (tooBig - 1n).toString() }
      expect(readMessage(ok)).toBeTruthy()
    }
  })

  test('refuses an address with a wrong EIP-55 checksum, and accepts lower case', async () => {
    const m = wire('Unlock') as Record<string, string>
    const lower = { ...m, token_network_address: m.token_network_address!.toLowerCase() }
    expect(readMessage(lower).type).toBe('Unlock')
    const flipped = m.token_network_address!.replace(/[a-f]/, (c) => c.toUpperCase())
    await expectRejected(JSON.stringify({ ...m, token_network_address: flipped }), InvalidMessageError)
  })

  test('a signature by someone other than the sender is refused', async () => {
    const f = fixtures.find((x) => x.name === 'LockedTransfer')!
    await expectRejected(JSON.stringify(f.message), InvalidSignatureError, '0x000000000000000000000000000000000000dEaD')
    await expect(decodeMessage(jsSecp256k1, JSON.stringify(f.message), f.signer)).resolves.toBeTruthy()
  })

  // The protocol leaves these outside the signed bytes: withdraw messages sign the on-chain withdraw layout
  // (docs/protocol.md §2.6), and RequestMonitoring signs the reward proof (§2.8) while its balance proof carries the partner's
  // own signature. The node must not trust them beyond what the transport authenticates.
  const unsigned: Record<string, string[]> = {
    WithdrawRequest: ['message_identifier', 'nonce'],
    WithdrawConfirmation: ['message_identifier', 'nonce'],
    RequestMonitoring: [
      'balance_proof.channel_identifier',
      'balance_proof.nonce',
      'balance_proof.balance_hash',
      'balance_proof.additional_hash',
      'balance_proof.signature',
    ],
  }

  test('changing any signed field changes the recovered signer (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...fixtures), fc.nat(), fc.bigInt({ min: 0n, max: 2n ** 63n }), async (f, pick, n) => {
        const candidates = fieldLeaves(f.message).filter((l) => l.path[0] !== 'signature' && !unsigned[f.name]?.includes(l.path.join('.')))
        const leaf = candidates[pick % candidates.length]!
        const m = structuredClone(f.message)
        const v = leaf.value as string
        const changed = /^\d+$/.test(v) ? (BigInt(v) === n ? n + 1n : n).toString() : `${v.slice(0, -1)}${v.endsWith('0') ? '1' : '0'}`
        setAt(m, leaf.path, changed)
        // Either the changed field is out of form (an address whose checksum broke), or the signer changes.
        const outcome = await decodeMessage(jsSecp256k1, JSON.stringify(m), f.signer).then(
          () => 'accepted',
          (e) => e,
        )
        expect(outcome === 'accepted' ? outcome : outcome.name).not.toBe('accepted')
        expect([InvalidMessageError, InvalidSignatureError].some((k) => outcome instanceof k)).toBe(true)
      }),
      { numRuns: 200 },
    )
  })

  test('any JSON value decodes or fails with a typed error, never anything else (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue(),
          fc
            .constantFrom(...fixtures)
            .chain((f) => fc.record({ ...Object.fromEntries(Object.keys(f.message).map((k) => [k, fc.oneof(fc.constant(f.message[k]), fc.jsonValue())])) })),
        ),
        async (value) => {
          const result = await decodeMessage(jsSecp256k1, JSON.stringify(value)).then(
            () => null,
            (e) => e,
          )
          if (result !== null) expect(result instanceof InvalidMessageError || result instanceof InvalidSignatureError, String(result)).toBe(true)
        },
      ),
      { numRuns: 300 },
    )
  })

  test('random valid messages survive sign, encode and decode with their signer (property)', async () => {
    const key = '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba' as const
    const randomHex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => bytesToHex(b))
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...fixtures),
        fc.array(fc.tuple(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), randomHex(20), randomHex(32)), { minLength: 40, maxLength: 40 }),
        async (f, randoms) => {
          const m = structuredClone(f.message)
          fieldLeaves(m).forEach((leaf, i) => {
            if (leaf.path.includes('signature')) return
            const v = leaf.value as string
            const [n, addr, h32] = randoms[i % randoms.length]!
            if (/^\d+$/.test(v)) setAt(m, leaf.path, n.toString())
            else if (v.length === 42) setAt(m, leaf.path, addr)
            else if (v.length === 66) setAt(m, leaf.path, h32)
          })
          const { signature: _, ...unsigned } = readMessage(m)
          const signed = await signMessage(jsSecp256k1, key, unsigned as Message)
          const decoded = await decodeMessage(jsSecp256k1, encodeMessage(signed), privateKeyToAddress(key))
          expect(decoded.message).toEqual(signed)
        },
      ),
      { numRuns: 100 },
    )
  })
})
