import type { Hex } from 'viem'
import { signMessage } from '../protocol/messages/sign.ts'
import type { Message } from '../protocol/messages/types.ts'
import type { Secp256k1Engine } from '../protocol/secp256k1.ts'
import { encodeMessage } from '../protocol/messages/wire.ts'

/** The `sign` of the delivery layer for a node whose key is at hand: sign as that key, encode as one wire line. */
export function lineSigner(curve: Secp256k1Engine, privateKey: Hex): (message: Message) => Promise<string> {
  return async (message) => encodeMessage(await signMessage(curve, privateKey, message))
}
