import { decodeEventLog, getAddress, toEventSelector, type Address, type Hex, type Log } from 'viem'
import { MonitoringService, SecretRegistry, TokenNetwork, TokenNetworkRegistry, UserDeposit } from '../contracts/index.ts'
import type { StateChange } from '../protocol/state/changes.ts'
import type { StoredChainEvent } from '../storage/storage.ts'

/** The contract a log comes from decides the ABI it is decoded with. */
export type EventSource = 'registry' | 'tokenNetwork' | 'secretRegistry' | 'userDeposit' | 'monitoringService'

/** A chain event as stored (debug API, notifications) and, where the protocol core reacts to it, as a state change. */
export type SyncedChainEvent = {
  event: StoredChainEvent
  change?: StateChange
}

const abis = {
  registry: TokenNetworkRegistry.abi,
  tokenNetwork: TokenNetwork.abi,
  secretRegistry: SecretRegistry.abi,
  userDeposit: UserDeposit.abi,
  monitoringService: MonitoringService.abi,
} as const

/** The events the node follows, per contract. */
export const followedEvents = {
  registry: ['TokenNetworkCreated'],
  tokenNetwork: [
    'ChannelOpened',
    'ChannelNewDeposit',
    'ChannelWithdraw',
    'ChannelClosed',
    'NonClosingBalanceProofUpdated',
    'ChannelSettled',
    'ChannelUnlocked',
  ],
  secretRegistry: ['SecretRevealed'],
  userDeposit: ['BalanceReduced', 'WithdrawPlanned'],
  // Followed by monitoring services only (src/monitor/), never by a node.
  monitoringService: ['NewBalanceProofReceived', 'RewardClaimed'],
} as const satisfies Record<EventSource, readonly string[]>

/** topics[0] of every followed event of `source`. */
export function eventSelectors(source: EventSource): Hex[] {
  const names: readonly string[] = followedEvents[source]
  return abis[source].filter((item) => item.type === 'event' && names.includes(item.name)).map((item) => toEventSelector(item as never))
}

/** Chain order: by block number, then log index (sort with it). */
export function byChainPosition(a: { blockNumber: bigint; logIndex: number }, b: { blockNumber: bigint; logIndex: number }): number {
  return a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1
}

export type DecodeChainEventParameters = {
  source: EventSource
  log: Log
  /** Reveal timeout given to channels opened by the event (the runtime's default). */
  defaultRevealTimeout: bigint
}

/**
 * Decodes one log into its stored form and, for events the protocol core consumes, its state change.
 * Returns undefined for a log that is not one of the followed events (e.g. DeprecationSwitch, or a pending
 * log without a block number).
 */
export function decodeChainEvent({ source, log, defaultRevealTimeout }: DecodeChainEventParameters): SyncedChainEvent | undefined {
  if (log.blockNumber === null || log.logIndex === null || log.transactionHash === null) return undefined
  // biome-ignore lint/suspicious/noImplicitAnyLet: TypeScript types it by control flow, as the union of the events of `abis[source]`.
  let decoded
  try {
    decoded = decodeEventLog({ abi: abis[source], data: log.data, topics: log.topics, strict: true })
  } catch {
    return undefined
  }
  if (!(followedEvents[source] as readonly string[]).includes(decoded.eventName)) return undefined
  const address = getAddress(log.address)
  const blockNumber = log.blockNumber
  const event: StoredChainEvent = {
    blockNumber,
    logIndex: log.logIndex,
    transactionHash: log.transactionHash,
    ...(log.transactionIndex !== null ? { transactionIndex: log.transactionIndex } : {}),
    ...(log.blockHash !== null ? { blockHash: log.blockHash } : {}),
    address,
    name: decoded.eventName,
    args: { ...decoded.args } as Record<string, unknown>,
  }
  const tokenNetwork = address
  const channel = (channelId: bigint, participants: Address[]) => Object.assign(event, { tokenNetwork, channelId, participants })

  switch (decoded.eventName) {
    case 'TokenNetworkCreated': {
      const { token_address: token, token_network_address } = decoded.args
      event.tokenNetwork = token_network_address
      return { event, change: { type: 'tokenNetworkCreated', token, tokenNetwork: token_network_address } }
    }
    case 'ChannelOpened': {
      const { channel_identifier: channelId, participant1, participant2, settle_timeout: settleTimeout } = decoded.args
      channel(channelId, [participant1, participant2])
      return {
        event,
        change: { type: 'channelOpened', tokenNetwork, channelId, participant1, participant2, settleTimeout, blockNumber, revealTimeout: defaultRevealTimeout },
      }
    }
    case 'ChannelNewDeposit': {
      const { channel_identifier: channelId, participant, total_deposit: totalDeposit } = decoded.args
      channel(channelId, [participant])
      return { event, change: { type: 'channelDeposit', tokenNetwork, channelId, participant, totalDeposit } }
    }
    case 'ChannelWithdraw': {
      const { channel_identifier: channelId, participant, total_withdraw: totalWithdraw } = decoded.args
      channel(channelId, [participant])
      return { event, change: { type: 'channelWithdraw', tokenNetwork, channelId, participant, totalWithdraw } }
    }
    case 'ChannelClosed': {
      const { channel_identifier: channelId, closing_participant: closer, nonce, balance_hash: balanceHash } = decoded.args
      channel(channelId, [closer])
      return { event, change: { type: 'channelClosed', tokenNetwork, channelId, closer, nonce, balanceHash, blockNumber } }
    }
    case 'NonClosingBalanceProofUpdated': {
      const { channel_identifier: channelId, closing_participant: closer, nonce, balance_hash: balanceHash } = decoded.args
      channel(channelId, [closer])
      return { event, change: { type: 'nonClosingUpdated', tokenNetwork, channelId, closer, nonce, balanceHash } }
    }
    case 'ChannelSettled': {
      const a = decoded.args
      channel(a.channel_identifier, [a.participant1, a.participant2])
      return {
        event,
        change: {
          type: 'channelSettled',
          tokenNetwork,
          channelId: a.channel_identifier,
          participant1: a.participant1,
          participant1Amount: a.participant1_amount,
          participant1Locksroot: a.participant1_locksroot,
          participant2: a.participant2,
          participant2Amount: a.participant2_amount,
          participant2Locksroot: a.participant2_locksroot,
          blockNumber,
        },
      }
    }
    case 'ChannelUnlocked': {
      const a = decoded.args
      channel(a.channel_identifier, [a.receiver, a.sender])
      return {
        event,
        change: {
          type: 'channelUnlocked',
          tokenNetwork,
          channelId: a.channel_identifier,
          receiver: a.receiver,
          sender: a.sender,
          locksroot: a.locksroot,
          unlockedAmount: a.unlocked_amount,
          returnedTokens: a.returned_tokens,
        },
      }
    }
    case 'SecretRevealed': {
      const { secrethash, secret } = decoded.args
      return { event, change: { type: 'secretRegistered', secrethash, secret, blockNumber } }
    }
    case 'BalanceReduced':
      event.participants = [decoded.args.owner]
      return { event }
    case 'WithdrawPlanned':
      event.participants = [decoded.args.withdrawer]
      return { event }
    case 'NewBalanceProofReceived': {
      const a = decoded.args
      Object.assign(event, { tokenNetwork: getAddress(a.token_network_address), channelId: a.channel_identifier, participants: [a.raiden_node_address] })
      return { event }
    }
    case 'RewardClaimed':
      event.participants = [decoded.args.ms_address]
      return { event }
    default:
      return undefined
  }
}
