import { encodeFunctionData, getAddress, type Address } from 'viem'
import { MonitoringService } from '../contracts/index.ts'
import type { RequestMonitoring, Signed } from '../protocol/messages/types.ts'
import { rewardIdentifier } from '../protocol/rewardProof.ts'
import { read, type ChainReader } from './reads.ts'
import type { ChainCall } from './transactionQueue.ts'

/**
 * MonitoringService (docs/protocol.md §1.9): what a monitoring service reads and the calls it makes. The calls are
 * built here and sent by the caller, after simulating them (src/chain/simulate.ts).
 */

/** A channel's reward as the contract records it: whose proof is on-chain and what the requester owes for it. */
export type MonitoringReward = {
  rewardAmount: bigint
  /** Nonce of the proof the reward was recorded for; a monitor call with a higher one takes it over. */
  nonce: bigint
  /** The monitored node, who pays (the zero address: no reward recorded, or already paid out). */
  rewardSender: Address
  /** The service that gets paid. */
  monitoringService: Address
}

export async function readMonitoringReward(
  chain: ChainReader,
  { monitoringService, tokenNetwork, channelId }: { monitoringService: Address; tokenNetwork: Address; channelId: bigint },
): Promise<MonitoringReward> {
  const [rewardAmount, nonce, rewardSender, service] = await read(chain, monitoringService, MonitoringService.abi, 'rewards', [
    rewardIdentifier(channelId, tokenNetwork),
  ])
  return { rewardAmount, nonce, rewardSender: getAddress(rewardSender), monitoringService: getAddress(service) }
}

/**
 * The first block in which `service` may call monitor for this closed channel: the contract's own rule (30% to 80% of
 * the network's minimum settle timeout after the close, spread by the addresses). It reverts (ChainRpcError here)
 * unless the service is registered and the channel closed.
 */
export async function readFirstBlockAllowedToMonitor(
  chain: ChainReader,
  p: { monitoringService: Address; tokenNetwork: Address; channelId: bigint; closing: Address; nonClosing: Address; service?: Address },
): Promise<bigint> {
  return read(chain, p.monitoringService, MonitoringService.abi, 'firstBlockAllowedToMonitorChannel', [
    p.tokenNetwork,
    p.channelId,
    p.closing,
    p.nonClosing,
    p.service ?? chain.address,
  ])
}

/** MonitoringService.monitor with what the request carries: the closer's proof, the requester's counter-signature and reward proof. */
export function monitorCall(monitoringService: Address, request: Signed<RequestMonitoring>, closing: Address): ChainCall {
  const bp = request.balance_proof
  return {
    to: monitoringService,
    data: encodeFunctionData({
      abi: MonitoringService.abi,
      functionName: 'monitor',
      args: [
        closing,
        request.non_closing_participant,
        bp.balance_hash,
        bp.nonce,
        bp.additional_hash,
        bp.signature,
        request.non_closing_signature,
        request.reward_amount,
        bp.token_network_address,
        request.signature,
      ],
    }),
    description: `MonitoringService.monitor(${bp.token_network_address}, ${bp.channel_identifier}, nonce ${bp.nonce})`,
  }
}

/** MonitoringService.claimReward: pays the recorded reward to the service that earned it, once the settle window is over. */
export function claimRewardCall(
  monitoringService: Address,
  { tokenNetwork, channelId, closing, nonClosing }: { tokenNetwork: Address; channelId: bigint; closing: Address; nonClosing: Address },
): ChainCall {
  return {
    to: monitoringService,
    data: encodeFunctionData({ abi: MonitoringService.abi, functionName: 'claimReward', args: [channelId, tokenNetwork, closing, nonClosing] }),
    description: `MonitoringService.claimReward(${tokenNetwork}, ${channelId})`,
  }
}
