import type { Address } from 'viem'
import { describe, expect, test } from 'vitest'
import type { BlockRange, BlockWatcher, BlockWatcherEvent } from '../../../src/chain/blockWatcher.ts'
import type { SyncedChainEvent } from '../../../src/chain/chainEvents.ts'
import { ChainFollower } from '../../../src/node/chainFollower.ts'
import type { Input } from '../../../src/node/engine.ts'
import { initialState } from '../../../src/protocol/state/access.ts'
import type { StateChange } from '../../../src/protocol/state/changes.ts'

const tokenNetwork = '0x00000000000000000000000000000000000000aa' as Address
const range = (fromBlock: bigint, toBlock: bigint): BlockRange => ({ type: 'blocks', fromBlock, toBlock, latestBlock: toBlock, tail: [] })

/** A watcher that hands out `events` in turn, and an engine that records what it is given (one batch per tick). */
function setup(events: BlockWatcherEvent[], chainEvents: (r: { fromBlock: bigint; toBlock: bigint }) => SyncedChainEvent[] = () => []) {
  const dispatched: { change: StateChange; extra: Omit<Input, 'change'> }[] = []
  const acknowledged: BlockRange[] = []
  const errors: { where: string; error: unknown }[] = []
  const state = {
    ...initialState({ address: '0x00000000000000000000000000000000000000bb', chainId: 1n, blockNumber: 0n }),
    tokenNetworks: { [tokenNetwork]: { token: tokenNetwork, graph: {} } },
  }
  const asked: { fromBlock: bigint; toBlock: bigint; tokenNetworks: Address[] }[] = []
  const watcher: BlockWatcher = {
    poll: async () => events.shift(),
    synced: (r) => void acknowledged.push(r),
    start: () => {},
    stop: async () => {},
    progress: () => ({ syncedBlock: 0n, confirmedBlock: 0n, latestBlock: 0n, blocksToSync: BigInt(events.length) }),
    recentBlocks: () => [],
  }
  const follower = new ChainFollower(
    {
      engine: {
        current: state,
        dispatch: async (change, extra = {}) => {
          dispatched.push({ change, extra })
          return { seq: dispatched.length, change, effects: [], outbox: [], transactions: [] }
        },
      },
      watcher,
      events: async (r) => {
        asked.push(r)
        return chainEvents(r)
      },
      onError: (where, error) => void errors.push({ where, error }),
    },
    0n,
  )
  return { follower, dispatched, acknowledged, errors, asked }
}

describe('ChainFollower', () => {
  test('a range becomes its events, then the block with the synced mark; acknowledged once durable', async () => {
    const opened: StateChange = { type: 'tokenNetworkCreated', tokenNetwork, token: tokenNetwork }
    const event = { blockNumber: 3n, logIndex: 0, transactionHash: `0x${'0'.repeat(64)}`, address: tokenNetwork, name: 'X', args: {} } as const
    const raw = { ...event, logIndex: 1, name: 'BalanceReduced' }
    const { follower, dispatched, acknowledged, asked } = setup([range(1n, 5n)], () => [{ event, change: opened }, { event: raw }])
    expect(await follower.syncOnce()).toBe(true)
    expect(asked).toEqual([{ fromBlock: 1n, toBlock: 5n, tokenNetworks: [tokenNetwork] }])
    expect(dispatched).toEqual([
      { change: opened, extra: { chainEvents: [event] } },
      { change: { type: 'block', blockNumber: 5n }, extra: { meta: { syncedBlock: 5n }, chainEvents: [raw] } },
    ])
    expect(acknowledged).toEqual([range(1n, 5n)])
    expect(follower.syncedBlock).toBe(5n)
    expect(await follower.syncOnce()).toBe(false)
  })

  test('catches up range after range until nothing is new, and stops early when told', async () => {
    const all = setup([range(1n, 2n), range(3n, 4n), range(5n, 6n)])
    await all.follower.catchUp(() => false)
    expect(all.acknowledged.map((r) => r.toBlock)).toEqual([2n, 4n, 6n])
    const stopped = setup([range(1n, 2n), range(3n, 4n)])
    let polls = 0
    await stopped.follower.catchUp(() => polls++ >= 1)
    expect(stopped.acknowledged.map((r) => r.toBlock)).toEqual([2n])
  })

  test('a reorg is reported, not applied; a failing sync leaves the range unacknowledged', async () => {
    const reorg = setup([{ type: 'reorg', commonAncestor: 3n, resyncFrom: 4n, replacedBlock: { number: 5n, hash: '0x01' }, deep: false }])
    expect(await reorg.follower.syncOnce()).toBe(true)
    expect(reorg.dispatched).toEqual([])
    expect(reorg.errors).toMatchObject([{ where: 'chain reorg' }])

    const failing = setup([range(1n, 5n)], () => {
      throw new Error('getLogs failed')
    })
    await expect(failing.follower.syncOnce()).rejects.toThrow('getLogs failed')
    expect(failing.acknowledged).toEqual([])
    expect(failing.follower.syncedBlock).toBe(0n)
  })
})
