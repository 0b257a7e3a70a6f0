import type { Address } from 'viem'

/** The key of a channel in NodeState.channels: channel ids are unique per token network only. */
export function channelKey(tokenNetwork: Address, channelId: bigint): string {
  return `${tokenNetwork.toLowerCase()}:${channelId}`
}
