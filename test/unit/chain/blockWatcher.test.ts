import { createPublicClient, custom, http, type PublicClient } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { createBlockWatcher, type BlockRange, type ChainReorg } from '../../../src/chain/blockWatcher.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../../src/devnet/anvil.ts'
import { createDevnetClient, type DevnetClient } from '../../../src/devnet/devnetClient.ts'
import { SyncReads } from '../../../src/chain/syncReads.ts'
import { mulberry32 } from '../../support/random.ts'

// The watcher needs blocks, not contracts: a bare anvil.
let anvil: Anvil
let devnet: DevnetClient
let client: PublicClient
beforeAll(async () => {
  anvil = await startAnvil()
  devnet = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
  client = createPublicClient({ transport: http(anvil.rpcUrl), cacheTime: 0 })
})
afterAll(() => anvil.stop())

let start: bigint
beforeEach(async () => {
  await devnet.mine({ blocks: 1 })
  start = await devnet.getBlockNumber()
})

const latest = () => devnet.getBlockNumber()

/** A block that differs from whatever was mined at its height before: it carries a transaction. */
async function mineDifferentBlock(): Promise<void> {
  await devnet.sendTransaction({ to: privateKeyToAccount(generatePrivateKey()).address, value: 1n })
}

async function pollRange(watcher: ReturnType<typeof createBlockWatcher>): Promise<BlockRange> {
  const event = await watcher.poll()
  if (event?.type !== 'blocks') throw new Error(`expected a range, got ${JSON.stringify(event, (_, v) => (typeof v === 'bigint' ? `${v}` : v))}`)
  return event
}

describe('createBlockWatcher', () => {
  test('hands out confirmed ranges, again until acknowledged, and reports progress', async () => {
    const watcher = createBlockWatcher(client, { fromBlock: start, confirmations: 3n })
    expect(await watcher.poll()).toBeUndefined()
    await devnet.mine({ blocks: 10 })

    const range = await pollRange(watcher)
    expect(range).toMatchObject({ fromBlock: start + 1n, toBlock: start + 7n, latestBlock: start + 10n })
    expect(watcher.progress()).toEqual({ syncedBlock: start, confirmedBlock: start + 7n, latestBlock: start + 10n, blocksToSync: 7n })
    // Not acknowledged: the same range comes again.
    expect(await pollRange(watcher)).toMatchObject({ fromBlock: start + 1n, toBlock: start + 7n })

    watcher.synced(range)
    expect(watcher.progress()).toMatchObject({ syncedBlock: start + 7n, blocksToSync: 0n })
    expect(await watcher.poll()).toBeUndefined()
    // The tail's hashes are the chain's.
    const last = range.tail.at(-1)!
    expect(last.number).toBe(start + 7n)
    expect(last.hash).toBe((await devnet.getBlock({ blockNumber: start + 7n })).hash)
  })

  test('splits a long catch-up into ranges of at most maxRange', async () => {
    await devnet.mine({ blocks: 25 })
    const watcher = createBlockWatcher(client, { fromBlock: start, confirmations: 0n, maxRange: 10n })
    const ranges: [bigint, bigint][] = []
    for (let event = await watcher.poll(); event?.type === 'blocks'; event = await watcher.poll()) {
      ranges.push([event.fromBlock, event.toBlock])
      watcher.synced(event)
    }
    expect(ranges).toEqual([
      [start + 1n, start + 10n],
      [start + 11n, start + 20n],
      [start + 21n, start + 25n],
    ])
  })

  test('reports a reorg of synced blocks (anvil snapshot, revert, other blocks) and resyncs from the fork', async () => {
    const watcher = createBlockWatcher(client, { fromBlock: start - 1n, confirmations: 0n })
    watcher.synced(await pollRange(watcher))
    const forkPoint = await latest()
    expect(watcher.progress().syncedBlock).toBe(forkPoint)

    const snapshot = await devnet.snapshot()
    await devnet.mine({ blocks: 3 })
    const doomed = await pollRange(watcher)
    expect(doomed).toMatchObject({ fromBlock: forkPoint + 1n, toBlock: forkPoint + 3n })
    watcher.synced(doomed)

    // Another chain of the same length replaces the three blocks.
    await devnet.revert({ id: snapshot })
    await mineDifferentBlock()
    await devnet.mine({ blocks: 2 })
    expect(await latest()).toBe(forkPoint + 3n)

    const reorg = (await watcher.poll()) as ChainReorg
    expect(reorg).toMatchObject({ type: 'reorg', commonAncestor: forkPoint, resyncFrom: forkPoint + 1n, deep: false })
    expect(reorg.replacedBlock).toEqual(doomed.tail.at(-1))
    expect(watcher.progress().syncedBlock).toBe(forkPoint)

    const resync = await pollRange(watcher)
    expect(resync).toMatchObject({ fromBlock: forkPoint + 1n, toBlock: forkPoint + 3n })
    expect(resync.tail.map((b) => b.hash)).not.toContain(doomed.tail[0]!.hash)
    watcher.synced(resync)
    expect(await watcher.poll()).toBeUndefined()
  })

  test('a fork that is longer than the synced chain is found while fetching the new range', async () => {
    const watcher = createBlockWatcher(client, { fromBlock: start - 1n, confirmations: 1n })
    await devnet.mine({ blocks: 2 })
    watcher.synced(await pollRange(watcher))
    // The fork starts above the latest block, which is one above the confirmed (synced) head.
    const forkPoint = await latest()
    const snapshot = await devnet.snapshot()
    await devnet.mine({ blocks: 2 })
    watcher.synced(await pollRange(watcher))
    expect(watcher.progress().syncedBlock).toBe(forkPoint + 1n)

    await devnet.revert({ id: snapshot })
    await mineDifferentBlock()
    await devnet.mine({ blocks: 5 })
    expect(await watcher.poll()).toMatchObject({ type: 'reorg', commonAncestor: forkPoint, resyncFrom: forkPoint + 1n })
    expect(await pollRange(watcher)).toMatchObject({ fromBlock: forkPoint + 1n, toBlock: (await latest()) - 1n })
  })

  test('a fork below every remembered block is a deep reorg from the oldest of them', async () => {
    const watcher = createBlockWatcher(client, { fromBlock: start - 1n, confirmations: 0n, reorgDepth: 2 })
    const snapshot = await devnet.snapshot()
    await devnet.mine({ blocks: 4 })
    watcher.synced(await pollRange(watcher))
    const remembered = watcher.recentBlocks()
    expect(remembered.map((b) => b.number)).toEqual([start + 3n, start + 4n])

    await devnet.revert({ id: snapshot })
    await mineDifferentBlock()
    await devnet.mine({ blocks: 3 })
    expect(await watcher.poll()).toMatchObject({ type: 'reorg', deep: true, resyncFrom: start + 3n, commonAncestor: start + 2n })
  })

  test('resumes from a last synced block, and with remembered hashes sees a reorg that happened meanwhile', async () => {
    const first = createBlockWatcher(client, { fromBlock: start - 1n, confirmations: 0n })
    const snapshot = await devnet.snapshot()
    await devnet.mine({ blocks: 3 })
    first.synced(await pollRange(first))
    const { syncedBlock } = first.progress()
    expect(syncedBlock).toBe(start + 3n)
    const persisted = first.recentBlocks()

    // A plain restart continues after the given block.
    await devnet.mine({ blocks: 2 })
    const plain = createBlockWatcher(client, { fromBlock: syncedBlock, confirmations: 0n })
    expect(await pollRange(plain)).toMatchObject({ fromBlock: syncedBlock + 1n, toBlock: syncedBlock + 2n })

    // While the node is down the synced blocks are replaced by a chain of the same height.
    await devnet.revert({ id: snapshot })
    await mineDifferentBlock()
    await devnet.mine({ blocks: 2 })
    expect(await latest()).toBe(syncedBlock)
    // Without the hashes nothing can be told apart; with them the reorg is reported.
    expect(await createBlockWatcher(client, { fromBlock: syncedBlock, confirmations: 0n }).poll()).toBeUndefined()
    const resumed = createBlockWatcher(client, { fromBlock: syncedBlock, confirmations: 0n, recentBlocks: persisted })
    // The fork is after `start`; the newest remembered block that stands is the one the first range was linked to.
    expect(persisted.map((b) => b.number)).toEqual([start - 1n, start + 2n, start + 3n])
    expect(await resumed.poll()).toMatchObject({ type: 'reorg', commonAncestor: start - 1n, resyncFrom: start, deep: false })
  })
})

/**
 * A client of the anvil whose every call is counted by method, and fails (an injected 503) at `failRate`, with no
 * retry of its own: what the watcher asks of an endpoint, and how it fares when the transport does not retry.
 */
function countedClient(failRate = 0, seed = 1) {
  const random = mulberry32(seed)
  const calls: Record<string, number> = {}
  let failed = 0
  const transport = custom(
    {
      async request({ method, params }: { method: string; params?: unknown }) {
        calls[method] = (calls[method] ?? 0) + 1
        if (random() < failRate) {
          failed++
          throw new Error('HTTP 503 (injected)')
        }
        const response = await fetch(anvil.rpcUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        })
        const body = (await response.json()) as { result?: unknown; error?: { message: string } }
        if (body.error) throw new Error(body.error.message)
        return body.result
      },
    },
    { retryCount: 0 },
  )
  const taken = () => {
    const taken = { ...calls }
    for (const k of Object.keys(calls)) delete calls[k]
    return taken
  }
  return { client: createPublicClient({ transport, cacheTime: 0 }) as PublicClient, taken, failed: () => failed }
}

describe('what the watcher asks of the endpoint', () => {
  test('a poll reads the latest number and one or two headers, whatever the length of the range', async () => {
    const { client: counted, taken } = countedClient()
    const watcher = createBlockWatcher(counted, { fromBlock: start - 1n, confirmations: 0n })
    // The first range of a watcher that remembers nothing: its last block and the last synced one, to link it to.
    await devnet.mine({ blocks: 3 })
    watcher.synced(await pollRange(watcher))
    expect(taken()).toEqual({ eth_blockNumber: 1, eth_getBlockByNumber: 2 })
    // Following, a block at a time: the new block's parent hash vouches for the last synced one.
    await devnet.mine({ blocks: 1 })
    watcher.synced(await pollRange(watcher))
    expect(taken()).toEqual({ eth_blockNumber: 1, eth_getBlockByNumber: 1 })
    // A longer range: its last block, and the last synced one checked on its own (the old watcher read all 32 of its tail).
    await devnet.mine({ blocks: 40 })
    const long = await pollRange(watcher)
    expect(long.toBlock - long.fromBlock).toBe(39n)
    watcher.synced(long)
    expect(taken()).toEqual({ eth_blockNumber: 1, eth_getBlockByNumber: 2 })
    // Nothing new: the last synced block still stands?
    expect(await watcher.poll()).toBeUndefined()
    expect(taken()).toEqual({ eth_blockNumber: 1, eth_getBlockByNumber: 1 })
    // The chain's block time, measured from the remembered blocks' timestamps (at least a second).
    expect(watcher.head()).toMatchObject({ confirmedBlock: long.toBlock, latestBlock: long.toBlock, blockTimeMs: expect.any(Number) })
  })

  test('through an endpoint failing a third of its calls, with no retry of its own, a catch-up in pieces gets through', async () => {
    const { client: flaky, failed } = countedClient(1 / 3, 7)
    await devnet.mine({ blocks: 200 })
    const head = await latest()
    const watcher = createBlockWatcher(flaky, {
      fromBlock: start,
      confirmations: 0n,
      maxRange: 20n,
      reads: new SyncReads({ callTimeoutMs: 1_000, retryForMs: 2_000, backoffMs: 5 }),
    })
    let polls = 0
    let stepsFailed = 0
    while (watcher.progress().syncedBlock < head && polls++ < 100) {
      const event = await watcher.poll().catch(() => void stepsFailed++)
      if (event?.type === 'blocks') watcher.synced(event)
    }
    expect(watcher.progress().syncedBlock).toBe(head)
    // Every failed call was asked again in place: the steps themselves went through.
    expect(failed()).toBeGreaterThan(5)
    expect(stepsFailed).toBe(0)
    expect(polls).toBe(Math.ceil(Number(head - start) / 20))
  })
})
