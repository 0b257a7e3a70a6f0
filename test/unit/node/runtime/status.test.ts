import { describe, expect, test } from 'vitest'
import type { HeadObservation } from '../../../../src/chain/blockWatcher.ts'
import { ChainRpcError } from '../../../../src/chain/errors.ts'
import type { EndpointHealth } from '../../../../src/chain/syncReads.ts'
import type { NodeNotice } from '../../../../src/node/notices.ts'
import { StatusTracker } from '../../../../src/node/runtime/status.ts'

/** A tracker over a follower whose synced block, head and endpoint the test sets, at a clock it moves. */
function setup() {
  const chain = {
    now: 1_000_000,
    syncedBlock: 100n,
    head: { confirmedBlock: 100n, latestBlock: 105n, at: 1_000_000, blockTimeMs: 1_000 } as HeadObservation,
    endpoint: { unreachable: false } as EndpointHealth,
  }
  const notices: NodeNotice[] = []
  const follower = {
    get syncedBlock() {
      return chain.syncedBlock
    },
    progress: () => ({ syncedBlock: chain.syncedBlock, confirmedBlock: chain.head.confirmedBlock, latestBlock: chain.head.latestBlock, blocksToSync: 0n }),
    head: () => chain.head,
    endpoint: () => chain.endpoint,
  }
  const tracker = new StatusTracker(follower, { publish: (n) => void notices.push(n) }, { pollingInterval: 500, now: () => chain.now })
  /** A look at the chain now: the latest block is `latest` (5 confirmations). */
  const look = (latest: bigint) => {
    chain.head = { ...chain.head, confirmedBlock: latest - 5n, latestBlock: latest, at: chain.now }
    chain.endpoint = { lastAnswerAt: chain.now, unreachable: false }
  }
  const statuses = () => notices.map((n) => (n.type === 'status' ? `${n.status.status}/${n.status.chain.state}` : n.type))
  return { chain, tracker, look, statuses }
}

describe('StatusTracker', () => {
  test('during the first sync: syncing, with the blocks left; told once ready, and following', () => {
    const { chain, tracker, look, statuses } = setup()
    look(205n)
    tracker.progressed()
    expect(tracker.current).toMatchObject({ status: 'syncing', blocksToSync: 100n, syncedBlock: 100n, headBlock: 200n, chain: { state: 'behind' } })
    // Behind is what a first sync is: no notice for it.
    expect(statuses()).toEqual([])
    chain.syncedBlock = 200n
    tracker.ready()
    expect(tracker.current).toMatchObject({ status: 'ready', blocksToSync: 0n, chain: { state: 'following' } })
    expect(statuses()).toEqual(['ready/following'])
  })

  test('a node that was ready and falls behind by more than two polling intervals of blocks: behind since then, told once; back, told again', () => {
    const { chain, tracker, look, statuses } = setup()
    tracker.ready()
    // Two blocks back is following (a block comes between two looks); three is behind at 1 s blocks and 500 ms polls.
    look(107n)
    tracker.progressed()
    expect(tracker.current.chain).toEqual({ state: 'following' })
    chain.now += 1_000
    const fellBehind = chain.now
    look(108n)
    tracker.progressed()
    expect(tracker.current).toMatchObject({ blocksToSync: 3n, chain: { state: 'behind', since: fellBehind } })
    chain.now += 5_000
    look(120n)
    tracker.progressed()
    expect(tracker.current).toMatchObject({ blocksToSync: 15n, chain: { state: 'behind', since: fellBehind } })
    chain.syncedBlock = 115n
    tracker.progressed()
    expect(tracker.current.chain).toEqual({ state: 'following' })
    expect(statuses()).toEqual(['ready/following', 'ready/behind', 'ready/following'])
  })

  test('the endpoint out of reach: unreachable since its first failure, with the last error; the head moves on at the block time', () => {
    const { chain, tracker, look, statuses } = setup()
    look(105n)
    tracker.ready()
    const failingSince = chain.now + 200
    const error = new ChainRpcError('eth_blockNumber', new Error('fetch failed'))
    chain.endpoint = { lastAnswerAt: chain.now, failingSince, lastError: error, unreachable: false }
    tracker.progressed()
    // Failing, but the read has not given up: not yet out of reach.
    expect(tracker.current.chain).toEqual({ state: 'following' })
    chain.now += 10_000
    chain.endpoint = { ...chain.endpoint, unreachable: true }
    tracker.progressed()
    expect(tracker.current).toMatchObject({
      headBlock: 110n,
      blocksToSync: 10n,
      chain: { state: 'unreachable', since: failingSince, error: { code: 'CHAIN_RPC', message: 'eth_blockNumber failed: fetch failed' } },
    })
    expect(tracker.headBlock()).toBe(110n)
    expect(tracker.reachable).toBe(false)
    look(116n)
    tracker.progressed()
    expect(tracker.reachable).toBe(true)
    expect(statuses()).toEqual(['ready/following', 'ready/unreachable', 'ready/behind'])
  })

  test('stopped is told whatever the chain', () => {
    const { tracker, statuses } = setup()
    tracker.ready()
    tracker.stopped()
    expect(tracker.current.status).toBe('stopped')
    expect(statuses()).toEqual(['ready/following', 'stopped/following'])
  })
})
