import type { Hex } from 'viem'
import { signMessage } from '../protocol/messages/sign.ts'
import type { Message } from '../protocol/messages/types.ts'
import { encodeMessage } from '../protocol/messages/wire.ts'

/** The `sign` of the delivery layer for a node whose key is at hand: sign as that key, encode as one wire line. */
export function lineSigner(privateKey: Hex): (message: Message) => Promise<string> {
  return async (message) => encodeMessage(await signMessage(privateKey, message))
}
