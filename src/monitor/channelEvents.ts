import { getAddress, type Address, type Hex } from 'viem'
import { rewardIdentifier } from '../protocol/rewardProof.ts'
import type { StoredChainEvent } from '../storage/storage.ts'
import { channelKey, type WatchedChannel } from './records.ts'
import type { MonitorTx } from './store.ts'

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/**
 * What a confirmed chain event changes in the service's records (docs/decisions/0031), for the channels it watches;
 * every other channel's events are ignored. Applying an event twice changes nothing more (a reorg makes the chain
 * watch sync blocks again). Pure over the store's step: the chain is not read here.
 *
 * - ChannelClosed by a requester's partner: a monitor duty for that requester (the requester closing itself: none).
 * - NonClosingBalanceProofUpdated: a duty whose nonce the chain now holds is not needed.
 * - ChannelSettled: the requests are dropped (nothing can use them now); a duty still due was missed.
 * - NewBalanceProofReceived: with our address, our monitor call is done and its reward is to be claimed (whoever's
 *   receipt we saw); with another service's, our duty is not needed, or our reward lost to its newer proof.
 * - RewardClaimed with our address: the reward is claimed (by us, or by anyone who called claimReward).
 */
export function applyChainEvent(tx: MonitorTx, event: StoredChainEvent, service: Address): void {
  const args = event.args
  switch (event.name) {
    case 'ChannelClosed':
      update(tx, event, (channel) => {
        if (channel.settled) return
        const closer = getAddress(args.closing_participant as Address)
        channel.closed = { by: closer, block: event.blockNumber }
        for (const [requester, held] of Object.entries(channel.requests)) {
          if (channel.duties[requester] || same(requester, closer)) continue
          channel.duties[requester] = { closing: closer, nonClosing: held.request.non_closing_participant, monitor: { status: 'due' } }
        }
      })
      return
    case 'NonClosingBalanceProofUpdated':
      update(tx, event, (channel) => {
        const nonce = args.nonce as bigint
        if (!channel.updated || channel.updated.nonce < nonce) channel.updated = { nonce, block: event.blockNumber }
        for (const [requester, duty] of Object.entries(channel.duties)) {
          const held = channel.requests[requester]
          if (duty.monitor.status === 'due' && held && held.request.balance_proof.nonce <= nonce)
            duty.monitor = { status: 'not_needed', note: `the chain holds nonce ${nonce} (NonClosingBalanceProofUpdated in block ${event.blockNumber})` }
        }
      })
      return
    case 'ChannelSettled':
      update(tx, event, (channel) => {
        channel.settled = { block: event.blockNumber }
        channel.requests = {}
        for (const duty of Object.values(channel.duties))
          if (duty.monitor.status === 'due') duty.monitor = { status: 'missed', note: `settled in block ${event.blockNumber} before it was submitted` }
      })
      return
    case 'NewBalanceProofReceived':
      update(tx, event, (channel) => {
        const requester = (args.raiden_node_address as Address).toLowerCase()
        const duty = channel.duties[requester]
        if (!duty) return
        const nonce = args.nonce as bigint
        const reward = args.reward_amount as bigint
        const ms = args.ms_address as Address
        if (same(ms, service)) {
          if (duty.monitor.status !== 'done' || duty.monitor.transactionHash !== event.transactionHash)
            duty.monitor = { status: 'done', nonce, rewardAmount: reward, transactionHash: event.transactionHash, blockNumber: event.blockNumber }
          duty.claim ??= reward > 0n ? { status: 'due', amount: reward } : { status: 'nothing', amount: 0n }
          return
        }
        const held = channel.requests[requester]
        if (duty.monitor.status === 'due' && held && held.request.balance_proof.nonce <= nonce)
          duty.monitor = { status: 'not_needed', note: `another service (${getAddress(ms)}) submitted nonce ${nonce}` }
        if (duty.claim?.status === 'due' && duty.monitor.nonce !== undefined && nonce > duty.monitor.nonce)
          duty.claim = {
            ...duty.claim,
            status: 'lost',
            note: `another service (${getAddress(ms)}) submitted a newer proof (nonce ${nonce}): the reward is its`,
          }
      })
      return
    case 'RewardClaimed': {
      if (!same(args.ms_address as Address, service)) return
      const id = (args.reward_identifier as Hex).toLowerCase()
      for (const key of tx.openChannels()) {
        const channel = tx.channel(key)
        if (!channel || rewardIdentifier(channel.channelId, channel.tokenNetwork).toLowerCase() !== id) continue
        for (const duty of Object.values(channel.duties)) {
          const claim = duty.claim
          if (duty.monitor.status !== 'done' || !claim || claim.status === 'claimed') continue
          duty.claim = { status: 'claimed', amount: args.amount as bigint, transactionHash: event.transactionHash, blockNumber: event.blockNumber }
        }
        tx.putChannel(channel)
      }
      return
    }
  }
}

/** Changes the watched channel an event is about, if the service watches it; a settled channel without work is forgotten. */
function update(tx: MonitorTx, event: StoredChainEvent, change: (channel: WatchedChannel) => void): void {
  if (event.tokenNetwork === undefined || event.channelId === undefined) return
  const key = channelKey(event.tokenNetwork, event.channelId)
  const channel = tx.channel(key)
  if (!channel) return
  change(channel)
  if (channel.settled && Object.keys(channel.duties).length === 0) tx.deleteChannel(key)
  else tx.putChannel(channel)
}
