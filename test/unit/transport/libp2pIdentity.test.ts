import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import fc from 'fast-check'
import { bytesToHex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { describe, expect, test } from 'vitest'
import { anvilKeys } from '../../../src/devnet/anvil.ts'
import { InvalidPeerKeyError } from '../../../src/transport/errors.ts'
import { decodeFrame, encodeFrames } from '../../../src/transport/libp2p/frames.ts'
import { addressOfPeer, libp2pPrivateKey, peerIdOfKey } from '../../../src/transport/libp2p/peerIdentity.ts'
import { encodeAnnouncement, readAnnouncement } from '../../../src/transport/libp2p/presence.ts'

const secp256k1Order = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const privateKeys = fc.bigInt({ min: 1n, max: secp256k1Order - 1n }).map((k) => `0x${k.toString(16).padStart(64, '0')}` as const)

describe('libp2p identity: the Ethereum key is the PeerId key', () => {
  test('the address of the PeerId of a key is the Ethereum address of that key', () => {
    fc.assert(
      fc.property(privateKeys, (key) => {
        expect(addressOfPeer(peerIdOfKey(key))).toBe(privateKeyToAddress(key))
      }),
      { numRuns: 200 },
    )
  })

  test('the address survives the PeerId as text (what an announcement or a multiaddr carries)', () => {
    const id = peerIdOfKey(anvilKeys[1])
    expect(id.toString()).toMatch(/^16Uiu2H/)
    expect(addressOfPeer(peerIdFromString(id.toString()))).toBe(privateKeyToAddress(anvilKeys[1]))
  })

  test('a peer whose key is not secp256k1 (a relay with an Ed25519 key) has no address', async () => {
    expect(addressOfPeer(peerIdFromPrivateKey(await generateKeyPair('Ed25519')))).toBeUndefined()
  })

  test.each(['0x12', `0x${'00'.repeat(31)}`, 'not hex', `0x${'zz'.repeat(32)}`])('refuses %s as a key', (key) => {
    expect(() => libp2pPrivateKey(key as `0x${string}`)).toThrow(InvalidPeerKeyError)
  })

  test('the raw key libp2p holds is the Ethereum key itself', () => {
    expect(bytesToHex(libp2pPrivateKey(anvilKeys[2]).raw)).toBe(anvilKeys[2])
  })
})

describe('message frames', () => {
  test('any batch of lines comes back whole and in order, however it is split', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 300 }), { maxLength: 60 }), fc.integer({ min: 1, max: 2000 }), (lines, target) => {
        const frames = encodeFrames(lines, target)
        expect(frames.flatMap((f) => decodeFrame(f)!)).toEqual(lines)
        if (lines.length === 0) expect(frames).toEqual([])
      }),
    )
  })

  test('splits a large batch into frames near the target size, and sends an oversized line alone', () => {
    const line = 'x'.repeat(1000)
    const frames = encodeFrames(Array(1000).fill(line), 64 * 1024)
    expect(frames.length).toBeGreaterThan(10)
    for (const f of frames) expect(f.length).toBeLessThanOrEqual(64 * 1024 + 2)
    const huge = 'y'.repeat(100_000)
    expect(encodeFrames(['a', huge, 'b'], 1000).map((f) => decodeFrame(f))).toEqual([['a'], [huge], ['b']])
  })

  test.each([['not json'], ['{"a":1}'], ['[1,2]'], ['["a",null]'], ['\xff']])('refuses the frame %j', (text) => {
    expect(decodeFrame(new TextEncoder().encode(text))).toBeUndefined()
  })

  test('refuses bytes that are not UTF-8', () => {
    expect(decodeFrame(new Uint8Array([0x5b, 0x22, 0xff, 0x22, 0x5d]))).toBeUndefined()
  })
})

describe('presence announcements', () => {
  test('round-trip', () => {
    const a = { v: 1 as const, session: 'abc', addrs: ['/ip4/127.0.0.1/tcp/1/ws/p2p/x/p2p-circuit/p2p/y'], ts: 1700000000000 }
    expect(readAnnouncement(encodeAnnouncement(a))).toEqual(a)
  })

  test.each([
    ['{}'],
    ['{"v":2,"session":"s","addrs":[],"ts":1}'],
    ['{"v":1,"session":"","addrs":[],"ts":1}'],
    ['{"v":1,"session":"s","addrs":[1],"ts":1}'],
    ['{"v":1,"session":"s","addrs":[],"ts":1.5}'],
    ['{"v":1,"session":"s","addrs":"x","ts":1}'],
    [JSON.stringify({ v: 1, session: 's', addrs: Array(17).fill('a'), ts: 1 })],
    ['null'],
    ['nope'],
  ])('refuses %s', (text) => {
    expect(readAnnouncement(new TextEncoder().encode(text))).toBeUndefined()
  })
})
