import type { Address, Hex } from 'viem'
import { InvalidSignatureError } from '../errors.ts'
import type { Secp256k1Engine } from '../secp256k1.ts'
import { recoverPackedSignerKeySync, signPackedSync } from '../signature.ts'
import { packMessage } from './pack.ts'
import { parseMessage } from './wire.ts'
import { balanceHash, packBalanceProof } from '../balanceProof.ts'
import type { ChannelSync, Message, Signed, SyncBalanceProof } from './types.ts'

/**
 * Signs a message as its sender: EIP-191 over its packed bytes (docs/protocol.md §2.1, §3.3). A ChannelSync's own
 * balance proof is signed first (docs/decisions/0034): the 212 bytes its sender signed when it sent that proof,
 * so the same signature again (RFC 6979), nothing new committed to.
 */
export async function signMessage<M extends Message>(curve: Secp256k1Engine, privateKey: Hex, message: M): Promise<Signed<M>> {
  const complete = message.type === 'ChannelSync' ? (withOwnProofSigned(curve, privateKey, message as ChannelSync) as M) : message
  return { ...complete, signature: signPackedSync(curve, privateKey, packMessage(complete)) }
}

function withOwnProofSigned(curve: Secp256k1Engine, privateKey: Hex, message: ChannelSync): ChannelSync {
  const proof = message.sender_balance_proof
  if (!proof || proof.signature) return message
  return { ...message, sender_balance_proof: { ...proof, signature: signPackedSync(curve, privateKey, packSyncProof(message, proof)) } }
}

/** The 212 bytes a ChannelSync's balance proof was signed over: the balance proof of the channel it names. */
export function packSyncProof(channel: Pick<ChannelSync, 'chain_id' | 'token_network_address' | 'channel_identifier'>, proof: SyncBalanceProof): Hex {
  return packBalanceProof({
    chainId: channel.chain_id,
    tokenNetworkAddress: channel.token_network_address,
    channelIdentifier: channel.channel_identifier,
    nonce: proof.nonce,
    balanceHash: balanceHash({ transferredAmount: proof.transferred_amount, lockedAmount: proof.locked_amount, locksroot: proof.locksroot }),
    additionalHash: proof.additional_hash,
  })
}

/** The address that signed a message; InvalidSignatureError if the signature recovers no key. */
export async function messageSigner(curve: Secp256k1Engine, message: Signed<Message>): Promise<Address> {
  return messageSignerKey(curve, message).signer
}

/** The signer of a message and its public key (64 bytes, x || y). */
function messageSignerKey(curve: Secp256k1Engine, message: Signed<Message>): { signer: Address; publicKey: Hex } {
  try {
    return recoverPackedSignerKeySync(curve, packMessage(message), message.signature)
  } catch (cause) {
    throw new InvalidSignatureError(`cannot recover a signer (${(cause as Error).message.split('\n')[0]})`)
  }
}

export type DecodedMessage = { message: Signed<Message>; signer: Address; signerKey: Hex }

/**
 * Decodes one untrusted wire message: every field checked, then the signer recovered. With `sender`, the
 * signer must be that address (the transport's authenticated peer). Throws only InvalidMessageError or
 * InvalidSignatureError.
 */
export async function decodeMessage(curve: Secp256k1Engine, text: string, sender?: Address): Promise<DecodedMessage> {
  const message = parseMessage(text)
  const { signer, publicKey } = messageSignerKey(curve, message)
  if (sender !== undefined && signer.toLowerCase() !== sender.toLowerCase()) throw new InvalidSignatureError(`signed by ${signer}, not by the sender ${sender}`)
  return { message, signer, signerKey: publicKey }
}
