import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import type { Address, Hex, PublicClient } from 'viem'
import { describe, expect, inject, test } from 'vitest'
import {
  createBlockWatcher,
  type BlockRange,
  type BlockWatcher,
  type BlockWatcherEvent,
  type CreateBlockWatcherParameters,
} from '../../../../src/chain/blockWatcher.ts'
import { ChainRpcError } from '../../../../src/chain/errors.ts'
import type { SyncedChainEvent } from '../../../../src/chain/chainEvents.ts'
import type { Deployment } from '../../../../src/chain/deployment.ts'
import { syncChainEvents } from '../../../../src/chain/eventSync.ts'
import { openChannel, registerToken } from '../../../../src/chain/tokenNetworkActions.ts'
import { createTransactionQueue } from '../../../../src/chain/transactionQueue.ts'
import { ChainFollower, type ChainFollowerParameters } from '../../../../src/node/runtime/chainFollower.ts'
import { Engine, type Input } from '../../../../src/node/runtime/engine.ts'
import { defaultContext, initialState } from '../../../../src/protocol/state/access.ts'
import type { StateChange } from '../../../../src/protocol/state/changes.ts'
import { openMemoryStorage } from '../../../../src/storage/memoryStorage.ts'
import type { StoredChainEvent } from '../../../../src/storage/storage.ts'
import { freshAccount, ownTokenNetwork } from '../../../support/sharedChain.ts'
import { startChainTestbed } from '../../chain/chainTestbed.ts'

const tokenNetwork = '0x00000000000000000000000000000000000000aa' as Address
const range = (fromBlock: bigint, toBlock: bigint): BlockRange => ({ type: 'blocks', fromBlock, toBlock, latestBlock: toBlock, tail: [] })

/** A watcher that hands out `events` in turn, and an engine that records what it is given (one batch per tick). */
function setup(events: BlockWatcherEvent[], chainEvents: (r: { fromBlock: bigint; toBlock: bigint }) => SyncedChainEvent[] = () => [], syncedBlock = 0n) {
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
    progress: () => ({ syncedBlock: 0n, confirmedBlock: 0n, latestBlock: 0n, blocksToSync: BigInt(events.length) }),
    head: () => ({ confirmedBlock: 0n, latestBlock: 0n }),
    recentBlocks: () => [],
    recentBlocksAfter: (r) => r.tail,
  }
  const follower = new ChainFollower(
    {
      engine: {
        current: state,
        dispatch: async (change, extra = {}) => {
          dispatched.push({ change, extra })
          return { seq: dispatched.length, change, effects: [] }
        },
      },
      watcher,
      events: async (r) => {
        asked.push(r)
        return chainEvents(r)
      },
      pollingInterval: 10,
      onError: (where, error) => void errors.push({ where, error }),
    },
    syncedBlock,
  )
  return { follower, dispatched, acknowledged, errors, asked }
}

const stored = (blockNumber: bigint, logIndex: number, name = 'BalanceReduced'): StoredChainEvent => ({
  blockNumber,
  logIndex,
  transactionHash: `0x${'0'.repeat(64)}`,
  address: tokenNetwork,
  name,
  args: {},
})

describe('ChainFollower', () => {
  test('a range becomes its events, then the block with the synced mark; acknowledged once durable', async () => {
    const opened: StateChange = { type: 'tokenNetworkCreated', tokenNetwork, token: tokenNetwork }
    const event = { ...stored(3n, 0), name: 'X' }
    const raw = stored(3n, 1)
    const { follower, dispatched, acknowledged, asked } = setup([range(1n, 5n)], () => [{ event, change: opened }, { event: raw }])
    expect(await follower.syncOnce()).toBe(true)
    expect(asked).toEqual([{ fromBlock: 1n, toBlock: 5n, tokenNetworks: [tokenNetwork] }])
    expect(dispatched).toEqual([
      { change: opened, extra: { chainEvents: [event] } },
      { change: { type: 'block', blockNumber: 5n }, extra: { meta: { syncedBlock: 5n, recentBlocks: [] }, chainEvents: [raw] } },
    ])
    expect(acknowledged).toEqual([range(1n, 5n)])
    expect(follower.syncedBlock).toBe(5n)
    expect(await follower.syncOnce()).toBe(false)
  })

  test('events come out once each, in chain order, and only those of the range and after the synced block', async () => {
    // As a careless endpoint and a replayed range would hand them: repeated, shuffled, and outside the range.
    const { follower, dispatched } = setup([range(4n, 9n)], () => [
      { event: stored(7n, 2) },
      { event: stored(4n, 0) },
      { event: stored(3n, 5) },
      { event: stored(7n, 2) },
      { event: stored(10n, 0) },
      { event: stored(5n, 1) },
      { event: stored(4n, 0) },
    ])
    await follower.syncOnce()
    expect(dispatched.flatMap((d) => d.extra.chainEvents ?? []).map((e) => `${e.blockNumber}:${e.logIndex}`)).toEqual(['4:0', '5:1', '7:2'])

    // A range that is already applied is acknowledged and nothing of it is dispatched again.
    const again = setup([range(4n, 9n)], () => [{ event: stored(5n, 1) }], 9n)
    expect(await again.follower.syncOnce()).toBe(true)
    expect(again.dispatched).toEqual([])
    expect(again.acknowledged).toEqual([range(4n, 9n)])
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
    const reorg = setup([{ type: 'reorg', commonAncestor: 3n, resyncFrom: 4n, replacedBlock: { number: 5n, hash: '0x01' }, deep: false }], () => [], 5n)
    expect(await reorg.follower.syncOnce()).toBe(true)
    expect(reorg.dispatched).toEqual([])
    expect(reorg.errors).toMatchObject([{ where: 'chain reorg' }])
    expect(reorg.follower.syncedBlock).toBe(3n)

    const failing = setup([range(1n, 5n)], () => {
      throw new Error('getLogs failed')
    })
    await expect(failing.follower.syncOnce()).rejects.toThrow('getLogs failed')
    expect(failing.acknowledged).toEqual([])
    expect(failing.follower.syncedBlock).toBe(0n)
  })
})

// ---- with the real watcher, event sync, engine and store ---------------------------------------------------------

/** A follower of `client`'s chain for `address` from `fromBlock`, over a real engine and memory store. */
async function realFollower(
  client: PublicClient,
  deployment: Pick<Deployment, 'chainId' | 'contracts'>,
  address: Address,
  fromBlock: bigint,
  wrap: (p: ChainFollowerParameters) => ChainFollowerParameters = (p) => p,
  watcherOptions: Partial<CreateBlockWatcherParameters> = {},
) {
  const identity = { chainId: BigInt(deployment.chainId), registry: deployment.contracts.TokenNetworkRegistry.address, address }
  const storage = await openMemoryStorage(identity)
  const engine = new Engine({
    state: initialState({ address, chainId: identity.chainId, blockNumber: fromBlock }),
    seq: 0,
    ctx: defaultContext,
    storage,
    now: Date.now,
    onApplied: () => {},
  })
  const errors: { where: string; error: unknown }[] = []
  const follower = new ChainFollower(
    wrap({
      engine,
      watcher: createBlockWatcher(client, { fromBlock, confirmations: 0n, ...watcherOptions }),
      events: async (range) =>
        (
          await syncChainEvents(client, {
            contracts: { tokenNetworkRegistry: identity.registry, secretRegistry: deployment.contracts.SecretRegistry.address },
            ...range,
            defaultRevealTimeout: 10n,
          })
        ).events,
      pollingInterval: 10,
      onError: (where, error) => void errors.push({ where, error }),
    }),
    fromBlock,
  )
  return { follower, storage, engine, errors }
}

describe("ChainFollower on the run's anvil", () => {
  test('a sync asked for while the loop syncs shares the loop’s step instead of applying the same range again', async () => {
    const deployment = inject('deployment')
    const owner = await freshAccount(inject('rpcUrl'))
    const { registered } = await ownTokenNetwork(owner, deployment)
    const at = registered.receipt.blockNumber
    // Every sync's events wait here and are handed out together, once `expected` syncs have them: two syncs of one
    // range are then dispatched into one commit, as they were under load (StorageError, "appears twice").
    const held: (() => void)[] = []
    let expected = Number.POSITIVE_INFINITY
    let firstHeld!: () => void
    const oneHeld = new Promise<void>((r) => (firstHeld = r))
    const handOut = () => {
      if (held.length >= expected) for (const release of held.splice(0)) release()
    }
    let polls = 0
    const { follower, storage, errors } = await realFollower(owner.chain.publicClient, deployment, owner.address, at - 1n, (p) => ({
      ...p,
      pollingInterval: 60_000,
      watcher: {
        ...p.watcher,
        poll: () => {
          polls++
          return p.watcher.poll()
        },
      },
      events: async (range) => {
        const events = await p.events(range)
        await new Promise<void>((release) => {
          held.push(release)
          firstHeld()
          handOut()
        })
        return events
      },
    }))
    follower.start()
    await oneHeld
    // What waitForBlock does: ask for a sync while the loop's is under way.
    const before = polls
    const asked = follower.syncOnce()
    expected = polls > before ? 2 : 1
    handOut()
    await asked
    await follower.stop()
    expect(errors).toEqual([])
    expect(follower.syncedBlock).toBeGreaterThanOrEqual(at)
    const created = await storage.chainEvents({ address: deployment.contracts.TokenNetworkRegistry.address, fromBlock: at, toBlock: at })
    expect(created.map((e) => e.transactionHash)).toEqual([registered.hash])
    await storage.close()
  })

  test('the loop syncs every block once, in order; a failed round is reported and synced at the next; stopped, it syncs nothing', async () => {
    const deployment = inject('deployment')
    const owner = await freshAccount(inject('rpcUrl'))
    const start = await owner.chain.publicClient.getBlockNumber()
    const asked: [bigint, bigint][] = []
    let failures = 1
    const { follower, storage, errors } = await realFollower(owner.chain.publicClient, deployment, owner.address, start, (p) => ({
      ...p,
      events: async (range) => {
        if (failures-- > 0) throw new Error('the endpoint failed')
        asked.push([range.fromBlock, range.toBlock])
        return p.events(range)
      },
    }))
    follower.start()
    const { registered } = await ownTokenNetwork(owner, deployment)
    const target = registered.receipt.blockNumber
    for (let i = 0; i < 500 && follower.syncedBlock < target; i++) await new Promise((r) => setTimeout(r, 10))
    await follower.stop()
    expect(errors.map((e) => [e.where, String(e.error)])).toEqual([['chain sync', 'Error: the endpoint failed']])
    expect(follower.syncedBlock).toBeGreaterThanOrEqual(target)
    // The failed range came again: the ranges synced cover every block once, in order.
    expect(asked[0]![0]).toBe(start + 1n)
    for (let i = 1; i < asked.length; i++) expect(asked[i]![0]).toBe(asked[i - 1]![1] + 1n)
    const created = await storage.chainEvents({ address: deployment.contracts.TokenNetworkRegistry.address, fromBlock: target, toBlock: target })
    expect(created.map((e) => e.transactionHash)).toEqual([registered.hash])

    // Stopped: new blocks are not synced, and a sync asked for does nothing.
    const synced = follower.syncedBlock
    await ownTokenNetwork(owner, deployment)
    expect(await follower.syncOnce()).toBe(false)
    await new Promise((r) => setTimeout(r, 50))
    expect(follower.syncedBlock).toBe(synced)
    await storage.close()
  })
})

describe('ChainFollower, a long catch-up through a failing endpoint', () => {
  test('is applied piece by piece: a failure costs its piece, not those before; each piece stores its mark with the block hashes', async () => {
    const deployment = inject('deployment')
    const owner = await freshAccount(inject('rpcUrl'))
    const start = await owner.chain.publicClient.getBlockNumber()
    // Blocks of our own (other files' tests mine on this anvil too): at least four after `start`.
    for (let i = 0; i < 2; i++) await ownTokenNetwork(owner, deployment)
    const head = await owner.chain.publicClient.getBlockNumber()
    expect(head - start).toBeGreaterThanOrEqual(4n)
    const asked: [bigint, bigint][] = []
    let syncedWhenItFailed: bigint | undefined
    const { follower, storage, errors } = await realFollower(
      owner.chain.publicClient,
      deployment,
      owner.address,
      start,
      (p) => ({
        ...p,
        events: async (range) => {
          asked.push([range.fromBlock, range.toBlock])
          // The third piece's logs fail, after their retries, twice in a row: one report.
          if (asked.length === 3 || asked.length === 4) {
            syncedWhenItFailed ??= follower.syncedBlock
            throw new ChainRpcError('eth_getLogs', new Error('HTTP 503'))
          }
          return p.events(range)
        },
      }),
      { maxRange: 1n },
    )
    await follower.catchUp(() => false)
    expect(follower.syncedBlock).toBeGreaterThanOrEqual(head)
    // The two pieces before the failure stayed synced; the failed one came again, and the rest after it.
    expect(syncedWhenItFailed).toBe(start + 2n)
    expect(asked.slice(0, 5)).toEqual([
      [start + 1n, start + 1n],
      [start + 2n, start + 2n],
      [start + 3n, start + 3n],
      [start + 3n, start + 3n],
      [start + 3n, start + 3n],
    ])
    expect(errors.map((e) => [e.where, String(e.error)])).toEqual([['chain sync', 'ChainRpcError: eth_getLogs failed: HTTP 503']])
    // The store holds the synced mark with the hashes of the last synced blocks, the newest the mark's own block.
    const { meta } = await storage.load()
    expect(meta.syncedBlock).toBe(follower.syncedBlock)
    const block = await owner.chain.publicClient.getBlock({ blockNumber: meta.syncedBlock })
    expect(meta.recentBlocks?.at(-1)).toEqual({ number: meta.syncedBlock, hash: block.hash, timestamp: block.timestamp })
    await storage.close()
  })
})

describe('ChainFollower through a reorg (a private anvil)', () => {
  test('the replaced blocks are synced again: their new events are applied and stored though they are at or below the synced block', async () => {
    const bed = await startChainTestbed({ accounts: 1 })
    try {
      const [A] = bed.accounts as [(typeof bed.accounts)[number]]
      const client = A.chain.publicClient
      const registry = bed.deployment.contracts.TokenNetworkRegistry.address
      const { tokenNetwork: tn } = await registerToken(A.chain, A.queue, { registry, token: bed.deployment.tokens.TTT })
      const forkPoint = await client.getBlockNumber()
      const { follower, storage, errors } = await realFollower(client, bed.deployment, A.chain.address, forkPoint - 1n)
      expect(await follower.syncOnce()).toBe(true)

      const snapshot = await bed.devnet.snapshot()
      const doomed = await openChannel(A.chain, A.queue, { tokenNetwork: tn, partner: privateKeyToAddress(generatePrivateKey()), settleTimeout: 10n })
      await follower.catchUp(() => false)
      expect(follower.syncedBlock).toBe(doomed.receipt.blockNumber)

      // The same height again, with another channel opened in it. A's queue stops first: it watches what it sent for
      // 32 blocks and would send the doomed opening again once the revert drops it, racing the replacing one for the
      // nonce (under load it won, and the replacing channel landed a block later).
      await A.queue.stop()
      await bed.devnet.revert({ id: snapshot })
      // A queue of its own: the account's nonce went back with the chain.
      const replacing = await openChannel(A.chain, createTransactionQueue(A.chain), {
        tokenNetwork: tn,
        partner: privateKeyToAddress(generatePrivateKey()),
        settleTimeout: 10n,
      })
      expect(replacing.receipt.blockNumber).toBe(doomed.receipt.blockNumber)
      await follower.catchUp(() => false)

      expect(errors).toMatchObject([{ where: 'chain reorg' }])
      expect(follower.syncedBlock).toBe(replacing.receipt.blockNumber)
      const events = await storage.chainEvents({ address: tn, fromBlock: replacing.receipt.blockNumber, toBlock: replacing.receipt.blockNumber })
      expect(events.map((e) => e.transactionHash as Hex)).toEqual([replacing.hash])
      await storage.close()
    } finally {
      await bed.stop()
    }
  })
})
