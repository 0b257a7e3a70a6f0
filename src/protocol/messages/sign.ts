import type { Address, Hex } from 'viem'
import { InvalidSignatureError } from '../errors.ts'
import { recoverPackedSignerKeySync, signPackedSync } from '../signature.ts'
import { packMessage } from './pack.ts'
import { parseMessage } from './wire.ts'
import type { Message, Signed } from './types.ts'

/** Signs a message as its sender: EIP-191 over its packed bytes (docs/protocol.md §2.1, §3.3). */
export async function signMessage<M extends Message>(privateKey: Hex, message: M): Promise<Signed<M>> {
  return { ...message, signature: signPackedSync(privateKey, packMessage(message)) }
}

/** The address that signed a message; InvalidSignatureError if the signature recovers no key. */
export async function messageSigner(message: Signed<Message>): Promise<Address> {
  return messageSignerKey(message).signer
}

/** The signer of a message and its public key (64 bytes, x || y). */
function messageSignerKey(message: Signed<Message>): { signer: Address; publicKey: Hex } {
  try {
    return recoverPackedSignerKeySync(packMessage(message), message.signature)
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
export async function decodeMessage(text: string, sender?: Address): Promise<DecodedMessage> {
  const message = parseMessage(text)
  const { signer, publicKey } = messageSignerKey(message)
  if (sender !== undefined && signer.toLowerCase() !== sender.toLowerCase()) throw new InvalidSignatureError(`signed by ${signer}, not by the sender ${sender}`)
  return { message, signer, signerKey: publicKey }
}
