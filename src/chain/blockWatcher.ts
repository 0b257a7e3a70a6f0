import { BlockNotFoundError, type Hex, type PublicClient } from 'viem'
import { ChainRpcError } from './errors.ts'

/** A block the watcher has handed out, remembered to notice when the chain replaces it. */
export type BlockRef = { number: bigint; hash: Hex }

/** Newly confirmed blocks whose events are to be synced; acknowledge with `synced(range)` once they are. */
export type BlockRange = {
  type: 'blocks'
  fromBlock: bigint
  toBlock: bigint
  latestBlock: bigint
  /** Hashes of the last blocks of the range (up to `reorgDepth`), linked parent to child. */
  tail: BlockRef[]
}

/**
 * Blocks already synced were replaced. Everything from `resyncFrom` on must be synced again (the watcher's
 * next range starts there). `deep` means no remembered block survived: the fork may be older than
 * `commonAncestor`, which is then only the oldest block we can vouch for minus one.
 */
export type ChainReorg = {
  type: 'reorg'
  commonAncestor: bigint
  resyncFrom: bigint
  /** The synced block that no longer exists as we saw it. */
  replacedBlock: BlockRef
  deep: boolean
}

export type BlockWatcherEvent = BlockRange | ChainReorg

export type SyncProgress = {
  /** The last block whose events are synced. */
  syncedBlock: bigint
  /** latest − confirmations: the newest block the node acts on. */
  confirmedBlock: bigint
  latestBlock: bigint
  /** Confirmed blocks not synced yet (rest-api `blocks_to_sync`). */
  blocksToSync: bigint
}

export type CreateBlockWatcherParameters = {
  /** The last block already synced (the deployment block − 1 for a new node); ranges start after it. */
  fromBlock: bigint
  /** Blocks a block must have on top of it before its events count; 5 by default (Raiden's default). */
  confirmations?: bigint
  /** How many of the last synced blocks keep their hash for reorg checks; 32 by default. */
  reorgDepth?: number
  /** Largest range handed out at once, so a long catch-up is synced (and persisted) piecewise; unlimited by default. */
  maxRange?: bigint
  /** Hashes remembered before a restart (from `recentBlocks()`), so a reorg during downtime is noticed. */
  recentBlocks?: readonly BlockRef[]
}

export type BlockWatcher = {
  /**
   * Looks at the chain once: a reorg of synced blocks, or the next range of confirmed blocks to sync, or
   * nothing new. A range is handed out again until acknowledged with `synced`, so two polls before an
   * acknowledgement hand out the same blocks: one caller at a time (the ChainFollower's sync step).
   */
  poll(): Promise<BlockWatcherEvent | undefined>
  /** The range's events are durable: the next poll continues after it. */
  synced(range: BlockRange): void
  progress(): SyncProgress
  /** The remembered hashes, oldest first: persist them with the synced block to check them after a restart. */
  recentBlocks(): BlockRef[]
}

/**
 * Looks at the latest block when polled and hands out ranges of confirmed blocks (latest − confirmations) to
 * sync, in order; when to poll is its caller's business. It remembers the hashes of the last synced blocks;
 * when one changes, it reports a reorg with the first block to sync again. A new range's blocks must chain
 * onto the last synced one (parent hashes), so a reorg during the poll itself is never taken for new blocks.
 */
export function createBlockWatcher(client: PublicClient, parameters: CreateBlockWatcherParameters): BlockWatcher {
  const confirmations = parameters.confirmations ?? 5n
  const reorgDepth = parameters.reorgDepth ?? 32
  const maxRange = parameters.maxRange
  let syncedBlock = parameters.fromBlock
  let latestBlock = syncedBlock
  /** Ascending by number, contiguous, ending at syncedBlock (when not empty). */
  let remembered: BlockRef[] = (parameters.recentBlocks ?? []).filter((b) => b.number <= syncedBlock).slice(-reorgDepth)

  async function block(number: bigint): Promise<{ hash: Hex; parentHash: Hex } | undefined> {
    try {
      const b = await client.getBlock({ blockNumber: number, includeTransactions: false })
      return b.hash ? { hash: b.hash, parentHash: b.parentHash } : undefined
    } catch (e) {
      // A block past the tip of a shortened chain: viem says BlockNotFoundError.
      if (e instanceof BlockNotFoundError) return undefined
      throw new ChainRpcError('eth_getBlockByNumber', e)
    }
  }

  async function findReorg(replaced: BlockRef): Promise<ChainReorg> {
    for (let i = remembered.length - 1; i >= 0; i--) {
      const ref = remembered[i]!
      const now = await block(ref.number)
      if (now?.hash === ref.hash)
        return applyReorg({ type: 'reorg', commonAncestor: ref.number, resyncFrom: ref.number + 1n, replacedBlock: replaced, deep: false })
    }
    const oldest = remembered[0]?.number ?? replaced.number
    return applyReorg({ type: 'reorg', commonAncestor: oldest - 1n, resyncFrom: oldest, replacedBlock: replaced, deep: true })
  }

  function applyReorg(reorg: ChainReorg): ChainReorg {
    syncedBlock = reorg.commonAncestor
    remembered = remembered.filter((b) => b.number <= reorg.commonAncestor)
    return reorg
  }

  async function poll(): Promise<BlockWatcherEvent | undefined> {
    let latest: bigint
    try {
      latest = await client.getBlockNumber({ cacheTime: 0 })
    } catch (e) {
      throw new ChainRpcError('eth_blockNumber', e)
    }
    latestBlock = latest
    const head = latest - confirmations
    const tip = remembered.at(-1)

    if (head <= syncedBlock) {
      // Nothing new; still make sure the last synced block stands (a reorg need not lengthen the chain).
      // A block above the head is not checked: the endpoint may just lag, or the fork may not be confirmed yet.
      if (tip && tip.number <= head) {
        const now = await block(tip.number)
        if (now && now.hash !== tip.hash) return findReorg(tip)
      }
      return undefined
    }

    const toBlock = maxRange !== undefined && head - syncedBlock > maxRange ? syncedBlock + maxRange : head
    const fromBlock = syncedBlock + 1n
    // The tail's blocks, plus the last synced block to link them to it.
    const first = max(fromBlock - 1n, toBlock - BigInt(reorgDepth) + 1n, 0n)
    const fetched: BlockRef[] = []
    let parentOk = true
    let previous: { hash: Hex; parentHash: Hex } | undefined
    for (let n = first; n <= toBlock; n++) {
      const b = await block(n)
      if (!b) return undefined // the chain shrank under us: look again next time
      if (previous && b.parentHash !== previous.hash) parentOk = false
      previous = b
      fetched.push({ number: n, hash: b.hash })
    }
    if (tip && first <= tip.number) {
      const seen = fetched.find((b) => b.number === tip.number)
      if (seen && seen.hash !== tip.hash) return findReorg(tip)
    } else if (tip) {
      // A range longer than the tail: check the last synced block on its own.
      const now = await block(tip.number)
      if (now && now.hash !== tip.hash) return findReorg(tip)
    }
    if (!parentOk) return undefined // blocks changed while we read them: retry next poll
    return { type: 'blocks', fromBlock, toBlock, latestBlock: latest, tail: fetched.filter((b) => b.number >= fromBlock) }
  }

  function synced(range: BlockRange): void {
    // An acknowledgement that no longer fits (a reorg came in between) changes nothing.
    if (range.fromBlock !== syncedBlock + 1n) return
    syncedBlock = range.toBlock
    remembered = [...remembered, ...range.tail].filter((b) => b.number <= syncedBlock).slice(-reorgDepth)
  }

  return {
    poll,
    synced,
    progress: () => {
      const confirmedBlock = latestBlock - confirmations
      return { syncedBlock, confirmedBlock, latestBlock, blocksToSync: confirmedBlock > syncedBlock ? confirmedBlock - syncedBlock : 0n }
    },
    recentBlocks: () => [...remembered],
  }
}

const max = (...values: bigint[]) => values.reduce((a, b) => (a > b ? a : b))
