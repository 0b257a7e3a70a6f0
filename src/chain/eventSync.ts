import { getAddress, type Address, type Log, type PublicClient } from 'viem'
import { byChainPosition, decodeChainEvent, eventSelectors, type EventSource, type SyncedChainEvent } from './chainEvents.ts'
import { ChainRpcError } from './errors.ts'
import { getLogsByChunk, getLogsChunk, LogChunkSize } from './getLogsByChunk.ts'
import type { SyncReads } from './syncReads.ts'

/** The contracts whose events the node follows. */
export type ChainContracts = {
  tokenNetworkRegistry: Address
  secretRegistry: Address
  /** UserDeposit, for the BalanceReduced / WithdrawPlanned notifications; skipped when absent. */
  userDeposit?: Address
  /** MonitoringService, for NewBalanceProofReceived / RewardClaimed: what a monitoring service follows (src/monitor/). */
  monitoringService?: Address
}

export type SyncChainEventsParameters = {
  contracts: ChainContracts
  /** Token networks created before `fromBlock` (from the node's state); those created in the range are found here. */
  tokenNetworks?: readonly Address[]
  fromBlock: bigint
  toBlock: bigint
  /** Reveal timeout put into every channelOpened state change. */
  defaultRevealTimeout: bigint
  /** Adaptive eth_getLogs range; pass the same one to every sync of an endpoint. A fresh default one otherwise. */
  chunkSize?: LogChunkSize
  /** How the endpoint is read (each call bounded in time, retried in place); pass the block watcher's. */
  reads?: SyncReads
  /** Called after each chunk: the last block whose events are all fetched. */
  onProgress?: (syncedTo: bigint) => void
}

export type SyncChainEventsReturnType = {
  /** Every followed event of the range, each once, ordered by (block, log index); those of other people's channels too. */
  events: SyncedChainEvent[]
  /** Every token network known after the range: the given ones and those created in it, in creation order. */
  tokenNetworks: Address[]
}

const registrySelectors = eventSelectors('registry')
const tokenNetworkSelectors = eventSelectors('tokenNetwork')
const secretRegistrySelectors = eventSelectors('secretRegistry')
const userDepositSelectors = eventSelectors('userDeposit')
const monitoringServiceSelectors = eventSelectors('monitoringService')

/**
 * Fetches and decodes the events of [fromBlock, toBlock] the node needs: the registry's TokenNetworkCreated,
 * every token network's channel events, SecretRevealed, and UserDeposit's BalanceReduced/WithdrawPlanned (and, for a
 * monitoring service, MonitoringService's NewBalanceProofReceived/RewardClaimed).
 *
 * One eth_getLogs per chunk covers all known contracts. A token network created inside a chunk is not in that
 * request's address list, so its events from its creation block to the chunk's end are fetched right after
 * (a contract emits nothing before it exists), and later chunks include it.
 *
 * The endpoint may repeat a log (within an answer, or in both requests of a chunk) and order them as it likes:
 * each log is kept once, by its position (block, log index), and the events are sorted. Two different logs at
 * one position mean the endpoint mixes forks: ChainRpcError, and the caller asks again later.
 */
export async function syncChainEvents(client: PublicClient, parameters: SyncChainEventsParameters): Promise<SyncChainEventsReturnType> {
  const { contracts, fromBlock, toBlock, defaultRevealTimeout, onProgress, reads } = parameters
  const chunkSize = parameters.chunkSize ?? new LogChunkSize()
  const registry = getAddress(contracts.tokenNetworkRegistry)
  const secretRegistry = getAddress(contracts.secretRegistry)
  const userDeposit = contracts.userDeposit && getAddress(contracts.userDeposit)
  const monitoringService = contracts.monitoringService && getAddress(contracts.monitoringService)
  const tokenNetworks = (parameters.tokenNetworks ?? []).map((a) => getAddress(a))
  const known = new Set<Address>(tokenNetworks)

  const sourceOf = (address: Address): EventSource | undefined => {
    if (address === registry) return 'registry'
    if (address === secretRegistry) return 'secretRegistry'
    if (address === userDeposit) return 'userDeposit'
    if (address === monitoringService) return 'monitoringService'
    return known.has(address) ? 'tokenNetwork' : undefined
  }
  const events: SyncedChainEvent[] = []
  const seen = new Map<string, Log>()
  const decodeAll = (logs: Log[]) => {
    for (const log of logs) {
      const at = `${log.blockNumber}:${log.logIndex}`
      const earlier = seen.get(at)
      if (earlier && !sameLog(earlier, log))
        throw new ChainRpcError('eth_getLogs', new Error(`two different logs at block ${log.blockNumber}, log ${log.logIndex}`))
      if (earlier) continue
      seen.set(at, log)
      const source = sourceOf(getAddress(log.address))
      const synced = source && decodeChainEvent({ source, log, defaultRevealTimeout })
      if (synced) events.push(synced)
    }
  }
  const selectors = [
    ...registrySelectors,
    ...tokenNetworkSelectors,
    ...secretRegistrySelectors,
    ...(userDeposit ? userDepositSelectors : []),
    ...(monitoringService ? monitoringServiceSelectors : []),
  ]

  let from = fromBlock
  while (from <= toBlock) {
    const address = [registry, secretRegistry, ...(userDeposit ? [userDeposit] : []), ...(monitoringService ? [monitoringService] : []), ...tokenNetworks]
    const chunk = await getLogsChunk(client, { address, eventSelectors: selectors, fromBlock: from, toBlock, chunkSize, ...(reads ? { reads } : {}) })
    const before = events.length
    decodeAll(chunk.logs)

    const newNetworks: Address[] = []
    let firstCreation = chunk.toBlock
    // In chain order, whatever order the answer came in: tokenNetworks lists them in creation order.
    for (const { event, change } of events.slice(before).sort((a, b) => byChainPosition(a.event, b.event))) {
      if (change?.type !== 'tokenNetworkCreated' || known.has(change.tokenNetwork)) continue
      known.add(change.tokenNetwork)
      tokenNetworks.push(change.tokenNetwork)
      newNetworks.push(change.tokenNetwork)
      if (event.blockNumber < firstCreation) firstCreation = event.blockNumber
    }
    if (newNetworks.length > 0)
      decodeAll(
        await getLogsByChunk(client, {
          address: newNetworks,
          eventSelectors: tokenNetworkSelectors,
          fromBlock: firstCreation,
          toBlock: chunk.toBlock,
          chunkSize,
          ...(reads ? { reads } : {}),
        }),
      )
    onProgress?.(chunk.toBlock)
    from = chunk.toBlock + 1n
  }

  events.sort((a, b) => byChainPosition(a.event, b.event))
  return { events, tokenNetworks }
}

/** The same log, as far as a node can tell: same block, transaction, emitter and content. */
function sameLog(a: Log, b: Log): boolean {
  return (
    a.blockHash === b.blockHash &&
    a.transactionHash === b.transactionHash &&
    a.address.toLowerCase() === b.address.toLowerCase() &&
    a.data === b.data &&
    a.topics.join() === b.topics.join()
  )
}
