import type { Address, Hex } from 'viem'
import type { SyncMark } from '../chain/serviceChainWatch.ts'
import type { RequestMonitoring, Signed } from '../protocol/messages/types.ts'

/**
 * What the monitoring service keeps, one record per watched channel (docs/decisions/0031): the newest request of each
 * side, what the chain said about the channel, and the work a partner's close gave the service. One record, so
 * everything about a channel changes in one write.
 */

/** A request the service holds and has acknowledged. */
export type StoredRequest = {
  request: Signed<RequestMonitoring>
  /** Who signed the balance proof: the partner whose close the request guards against. */
  closing: Address
  /** Unix milliseconds. */
  receivedAt: number
}

/** The service's `monitor` call for one side of a closed channel. */
export type MonitorStep = {
  /**
   * due: to be sent once the contract allows it (and it is still needed); sending: about to be broadcast (a restart
   * first waits for the account's pending transactions); sent: broadcast, `transactionHash` known; done: mined, or
   * seen in NewBalanceProofReceived with our address; not_needed: the chain already holds that nonce (the requester
   * or another service submitted it) or the requester closed; missed: settled first; failed: the contract refused it.
   */
  status: 'due' | 'sending' | 'sent' | 'done' | 'not_needed' | 'missed' | 'failed'
  /** The request's nonce and reward, set when it is sent. */
  nonce?: bigint
  rewardAmount?: bigint
  transactionHash?: Hex
  blockNumber?: bigint
  /** Why it waits, or why it ended so. */
  note?: string
}

/** The reward claim that follows a monitor call that was ours. */
export type ClaimStep = {
  /**
   * due: to be claimed once the settle window is over; sending / sent: as MonitorStep; claimed: RewardClaimed with our
   * address (whoever sent it); lost: another service submitted a newer proof and the reward is its; nothing: the
   * reward was 0; failed: the contract refused it.
   */
  status: 'due' | 'sending' | 'sent' | 'claimed' | 'lost' | 'nothing' | 'failed'
  amount: bigint
  transactionHash?: Hex
  blockNumber?: bigint
  note?: string
}

/** What a partner's close left to do for one requester. */
export type Duty = {
  closing: Address
  nonClosing: Address
  monitor: MonitorStep
  claim?: ClaimStep
}

/** A channel the service holds a request for, or has work or a reward pending on. */
export type WatchedChannel = {
  tokenNetwork: Address
  channelId: bigint
  /** The newest acknowledged request of each side, by the requester's lowercase address. Emptied at settlement. */
  requests: Record<string, StoredRequest>
  closed?: { by: Address; block: bigint }
  /** The newest NonClosingBalanceProofUpdated seen (by anyone). */
  updated?: { nonce: bigint; block: bigint }
  settled?: { block: bigint }
  /** By the non-closing requester's lowercase address. */
  duties: Record<string, Duty>
}

/** How far the service has followed the chain (its chain watch's mark). */
export type SyncRecord = SyncMark

/** The key of a channel: its token network (lower case) and id. */
export function channelKey(tokenNetwork: Address, channelId: bigint): string {
  return `${tokenNetwork.toLowerCase()}:${channelId}`
}

/** A record still has something to do or show: a request held, or work or a reward pending. */
export function dutyOpen(duty: Duty): boolean {
  if (duty.monitor.status === 'due' || duty.monitor.status === 'sending' || duty.monitor.status === 'sent') return true
  const claim = duty.claim?.status
  return claim === 'due' || claim === 'sending' || claim === 'sent'
}
