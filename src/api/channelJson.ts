import { getAddress, type Address } from 'viem'
import { balance } from '../protocol/channel/amounts.ts'
import type { Channel, ChannelState } from '../protocol/state/types.ts'

/** The Channel object of docs/rest-api.md, field for field and in its order; amounts are bigints (`json()` writes them as strings). */
export type ChannelJson = {
  channel_identifier: bigint
  token_network_address: Address
  partner_address: Address
  token_address: Address
  balance: bigint
  total_deposit: bigint
  total_withdraw: bigint
  state: 'opened' | 'closed' | 'settled'
  settle_timeout: bigint
  reveal_timeout: bigint
}

/**
 * The API knows three states (docs/rest-api.md, Channel object); the node has two more, for a transaction on its way. Each maps to what the
 * channel is on-chain until that transaction is mined: `closing` is still open there (and goes back to opened
 * if the close fails), `settling` is still closed.
 */
export const apiChannelState: Record<ChannelState, ChannelJson['state']> = {
  opened: 'opened',
  closing: 'opened',
  closed: 'closed',
  settling: 'closed',
  settled: 'settled',
}

/**
 * A channel as the API shows it. `balance` is Raiden's: our deposit, minus our withdraw total (the higher of the
 * on-chain one and one we asked for and is not expired), minus what we transferred, plus what the partner
 * transferred to us. Locked amounts are not subtracted: a pending lock is still ours until its secret is revealed
 * and unlocked, and comes back to us if it expires. `total_withdraw` is the on-chain one, as docs/rest-api.md defines it.
 */
export function channelJson(channel: Channel): ChannelJson {
  return {
    channel_identifier: channel.id,
    token_network_address: getAddress(channel.tokenNetwork),
    partner_address: getAddress(channel.partner),
    token_address: getAddress(channel.token),
    balance: balance(channel.our, channel.partnerEnd),
    total_deposit: channel.our.deposit,
    total_withdraw: channel.our.withdrawn,
    state: apiChannelState[channel.state],
    settle_timeout: channel.settleTimeout,
    reveal_timeout: channel.revealTimeout,
  }
}
