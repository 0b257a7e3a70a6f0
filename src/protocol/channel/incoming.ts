import { maxUint256, type Address, type Hex } from 'viem'
import { balanceHash } from '../balanceProof.ts'
import { locksroot } from '../locks.ts'
import { messageHash } from '../messages/messageHash.ts'
import type { EnvelopeMessage, Signed } from '../messages/types.ts'
import type { Channel, ChannelEnd, PendingLock } from '../state/types.ts'
import { locked, transferred } from './amounts.ts'

export type Verdict<T> = { ok: true; value: T } | { ok: false; reason: string }

export const reject = (reason: string): { ok: false; reason: string } => ({ ok: false, reason })

/**
 * The checks every balance proof from the partner must pass (docs/protocol.md §4.3), then the type-specific ones
 * given as the locks and transferred amount the new proof must commit to. Returns the partner's end as it
 * is after applying the proof.
 */
export function receivePartnerProof(
  channel: Channel,
  message: Signed<EnvelopeMessage>,
  sender: Address,
  expected: { locks: PendingLock[]; transferredAmount: bigint },
): Verdict<ChannelEnd> {
  const end = channel.partnerEnd
  if (sender.toLowerCase() !== channel.partner.toLowerCase()) return reject(`signed by ${sender}, not by the channel partner ${channel.partner}`)
  if (channel.state !== 'opened') return reject(`channel is ${channel.state}`)
  if (message.chain_id !== channel.chainId) return reject(`chain id ${message.chain_id} is not ${channel.chainId}`)
  if (message.token_network_address.toLowerCase() !== channel.tokenNetwork.toLowerCase()) return reject('wrong token network')
  if (message.channel_identifier !== channel.id) return reject(`channel ${message.channel_identifier} is not ${channel.id}`)
  if (message.transferred_amount + message.locked_amount > maxUint256) return reject('transferred + locked overflows uint256')
  if (message.nonce !== end.nonce + 1n) return reject(`nonce ${message.nonce} is not ${end.nonce + 1n}`)
  if (message.transferred_amount < transferred(end)) return reject('transferred amount went down')
  if (message.transferred_amount !== expected.transferredAmount)
    return reject(`transferred amount ${message.transferred_amount} is not ${expected.transferredAmount}`)
  const plain = expected.locks.map(({ expiration, amount, secrethash }) => ({ expiration, amount, secrethash }))
  const lockedAmount = plain.reduce((s, l) => s + l.amount, 0n)
  if (message.locked_amount !== lockedAmount) return reject(`locked amount ${message.locked_amount} is not ${lockedAmount}`)
  const root: Hex = locksroot(plain)
  if (message.locksroot.toLowerCase() !== root) return reject('locksroot does not match the pending locks')
  return {
    ok: true,
    value: {
      ...end,
      nonce: message.nonce,
      locks: expected.locks,
      balanceProof: {
        nonce: message.nonce,
        transferredAmount: message.transferred_amount,
        lockedAmount: message.locked_amount,
        locksroot: root,
        balanceHash: balanceHash({ transferredAmount: message.transferred_amount, lockedAmount: message.locked_amount, locksroot: root }),
        messageHash: messageHash(message),
        signature: message.signature,
      },
    },
  }
}

export { locked, transferred }
