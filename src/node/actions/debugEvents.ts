import type { Address, Hex } from 'viem'
import { channelWith, tokenNetworkOf } from '../../protocol/state/access.ts'
import type { StoredChainEvent, StoredEvent } from '../../storage/storage.ts'
import { NotFoundError } from '../errors.ts'
import { pageOf } from './payments.ts'
import type { NodeClient } from './client.ts'

/**
 * Which chain events (the debug endpoints of earlier API revisions): the registry's TokenNetworkCreated events,
 * every event of a token network's contract, or its channel events, all channels or our channel with a partner.
 */
export type ChainEventScope = { of: 'network' } | { of: 'tokenNetwork'; token: Address } | { of: 'channels'; token: Address; partner?: Address }

export type BlockRange = { fromBlock?: bigint; toBlock?: bigint }

/**
 * The stored chain events of `scope` within the inclusive block range, oldest first (block, then log index).
 * A token with no token network, or no channel of ours with the partner, is a NotFoundError (404).
 */
export async function readChainEvents(client: NodeClient, scope: ChainEventScope, range: BlockRange = {}): Promise<StoredChainEvent[]> {
  return withPositions(client, await selectChainEvents(client, scope, range))
}

async function selectChainEvents(client: NodeClient, scope: ChainEventScope, range: BlockRange): Promise<StoredChainEvent[]> {
  const span = { ...(range.fromBlock !== undefined ? { fromBlock: range.fromBlock } : {}), ...(range.toBlock !== undefined ? { toBlock: range.toBlock } : {}) }
  if (scope.of === 'network') {
    const registry = client.config.deployment.contracts.TokenNetworkRegistry.address
    return (await client.store.chainEvents({ address: registry, ...span })).filter((e) => e.name === 'TokenNetworkCreated')
  }
  const state = client.state
  const tokenNetwork = tokenNetworkOf(state, scope.token)
  if (!tokenNetwork) throw new NotFoundError(`token ${scope.token} not found: no token network is registered for it`)
  if (scope.of === 'tokenNetwork') return client.store.chainEvents({ address: tokenNetwork, ...span })
  if (scope.partner === undefined) return (await client.store.chainEvents({ tokenNetwork, ...span })).filter((e) => e.channelId !== undefined)
  const channel = channelWith(state, tokenNetwork, scope.partner)
  if (!channel) throw new NotFoundError(`channel with partner ${scope.partner} for token ${scope.token} not found`)
  return client.store.chainEvents({ tokenNetwork, channelId: channel.id, ...span })
}

/** Events stored without their block hash and transaction index (by older versions) get them from the receipt. */
async function withPositions(client: NodeClient, events: StoredChainEvent[]): Promise<StoredChainEvent[]> {
  const receipts = new Map<string, Promise<{ blockHash: Hex; transactionIndex: number } | undefined>>()
  const receipt = (hash: Hex) => {
    if (!receipts.has(hash))
      receipts.set(
        hash,
        client.chain.publicClient.getTransactionReceipt({ hash }).then(
          (r) => ({ blockHash: r.blockHash, transactionIndex: r.transactionIndex }),
          () => undefined,
        ),
      )
    return receipts.get(hash)!
  }
  return Promise.all(
    events.map(async (e) => {
      if (e.blockHash !== undefined && e.transactionIndex !== undefined) return e
      const r = await receipt(e.transactionHash)
      return r ? { ...e, ...r } : e
    }),
  )
}

/** The node's own events (payments, mediations, rejected messages, channel state changes...), oldest first, paged. */
export function readNodeEvents(client: NodeClient, page: { limit?: number; offset?: number }): Promise<StoredEvent[]> {
  return client.store.events(pageOf(page))
}
