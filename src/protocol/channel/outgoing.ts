import type { Hex } from 'viem'
import { balanceHash } from '../balanceProof.ts'
import { locksroot } from '../locks.ts'
import { messageHash } from '../messages/messageHash.ts'
import type { EnvelopeFields, EnvelopeMessage } from '../messages/types.ts'
import type { Channel, PendingLock } from '../state/types.ts'

const stripSecret = ({ expiration, amount, secrethash }: PendingLock) => ({ expiration, amount, secrethash })

/**
 * Our next balance proof in `channel`: the next nonce over the given locks and transferred amount, carried by
 * the message `build` makes from the envelope fields. Returns the channel with our end advanced (and the
 * proof remembered by its balance hash) and the message to send.
 */
export function nextOwnProof<M extends EnvelopeMessage>(
  channel: Channel,
  messageIdentifier: bigint,
  locks: PendingLock[],
  transferredAmount: bigint,
  build: (fields: EnvelopeFields) => M,
): { channel: Channel; message: M } {
  const nonce = channel.our.nonce + 1n
  const plainLocks = locks.map(stripSecret)
  const root = locksroot(plainLocks)
  const lockedAmount = plainLocks.reduce((sum, l) => sum + l.amount, 0n)
  const message = build({
    message_identifier: messageIdentifier,
    chain_id: channel.chainId,
    token_network_address: channel.tokenNetwork,
    channel_identifier: channel.id,
    nonce,
    transferred_amount: transferredAmount,
    locked_amount: lockedAmount,
    locksroot: root,
  })
  const hash: Hex = balanceHash({ transferredAmount, lockedAmount, locksroot: root })
  return {
    message,
    channel: {
      ...channel,
      our: {
        ...channel.our,
        nonce,
        locks,
        balanceProof: { nonce, transferredAmount, lockedAmount, locksroot: root, balanceHash: hash, messageHash: messageHash(message) },
      },
    },
  }
}
