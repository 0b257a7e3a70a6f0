import { privateKeyFromRaw } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import type { PeerId, PrivateKey } from '@libp2p/interface'
import { secp256k1 } from '@noble/curves/secp256k1'
import { keccak_256 } from '@noble/hashes/sha3'
import { bytesToHex, getAddress, hexToBytes, isHex, type Address, type Hex } from 'viem'
import { InvalidPeerKeyError } from '../errors.ts'

/**
 * The node's Ethereum key as its libp2p identity (secp256k1). Its PeerId inlines the compressed public key, and
 * the Noise handshake proves the remote holds the key, so `connection.remotePeer` names an authenticated address.
 */
export function libp2pPrivateKey(privateKey: Hex): PrivateKey {
  if (!isHex(privateKey) || privateKey.length !== 66) throw new InvalidPeerKeyError('the private key must be 32 bytes of hex (0x + 64 digits)')
  const key = privateKeyFromRaw(hexToBytes(privateKey))
  if (key.type !== 'secp256k1') throw new InvalidPeerKeyError(`expected a secp256k1 key, got ${key.type}`)
  return key
}

/** The PeerId of an Ethereum private key (the `16Uiu2H…` string other nodes dial). */
export function peerIdOfKey(privateKey: Hex): PeerId {
  return peerIdFromPrivateKey(libp2pPrivateKey(privateKey))
}

/**
 * The Ethereum address of a peer, or undefined if its key is not secp256k1 (a relay with an Ed25519 key, say):
 * keccak-256 of the uncompressed public key, last 20 bytes. A pure function of the PeerId.
 */
export function addressOfPeer(peerId: PeerId): Address | undefined {
  return identityOfPeer(peerId)?.address
}

/** A peer's address and public key (64 bytes, x || y, as a signature recovers it), or undefined as addressOfPeer. */
export function identityOfPeer(peerId: PeerId): { address: Address; publicKey: Hex } | undefined {
  if (peerId.type !== 'secp256k1') return undefined
  try {
    const xy = secp256k1.ProjectivePoint.fromHex(peerId.publicKey.raw).toRawBytes(false).subarray(1)
    return { address: getAddress(bytesToHex(keccak_256(xy).subarray(12))), publicKey: bytesToHex(xy) }
  } catch {
    return undefined
  }
}
