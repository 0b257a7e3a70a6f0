import { BlockNotFoundError, type Hex, type PublicClient } from 'viem'
import { SyncReads } from './syncReads.ts'

/** A block the watcher has handed out, remembered to notice when the chain replaces it. */
export type BlockRef = {
  number: bigint
  hash: Hex
  /** The block's timestamp (seconds): what the chain's block time is measured from. Absent in refs stored by older versions. */
  timestamp?: bigint
}

/** Newly confirmed blocks whose events are to be synced; acknowledge with `synced(range)` once they are. */
export type BlockRange = {
  type: 'blocks'
  fromBlock: bigint
  toBlock: bigint
  latestBlock: bigint
  /**
   * Blocks whose hashes were read, ascending: the range's last and its parent (and, when nothing was remembered
   * yet, the last synced block). Remembered once the range is synced, to notice a reorg of them and trace it back.
   */
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

/** The chain's head as last seen, and how fast it grows: what the node's best knowledge of "now" is made of. */
export type HeadObservation = {
  /** latest − confirmations when the endpoint last told the latest block. */
  confirmedBlock: bigint
  latestBlock: bigint
  /** When it told it (unix ms); absent before the first answer. */
  at?: number
  /** The chain's block time (ms) measured from the timestamps of the remembered blocks; absent until two are. */
  blockTimeMs?: number
}

export type CreateBlockWatcherParameters = {
  /** The last block already synced (the deployment block − 1 for a new node); ranges start after it. */
  fromBlock: bigint
  /** Blocks a block must have on top of it before its events count; 5 by default (Raiden's default). */
  confirmations?: bigint
  /** How many synced blocks keep their hash for reorg checks (the last two of each range, the newest ones); 32 by default. */
  reorgDepth?: number
  /**
   * Largest range handed out at once, so a long catch-up is synced (and persisted) piece by piece: a failure then
   * costs one piece, not the whole range. A function is asked at each poll (the logs' adaptive chunk size). Unlimited by default.
   */
  maxRange?: bigint | (() => bigint)
  /** Hashes remembered before a restart (from `recentBlocks()`), so a reorg during downtime is noticed. */
  recentBlocks?: readonly BlockRef[]
  /** How the endpoint is read (bounded in time, retried in place); a default SyncReads when absent. */
  reads?: SyncReads
  now?: () => number
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
  /** The chain's head as last seen and the measured block time. */
  head(): HeadObservation
  /** The remembered hashes, oldest first: persist them with the synced block to check them after a restart. */
  recentBlocks(): BlockRef[]
  /** The remembered hashes once `range` is acknowledged: what to persist together with its synced mark. */
  recentBlocksAfter(range: BlockRange): BlockRef[]
}

/**
 * Looks at the latest block when polled and hands out ranges of confirmed blocks (latest − confirmations) to
 * sync, in order; when to poll is its caller's business. It remembers the hashes of synced blocks (the last two of
 * each range); when the last synced one changes, it reports a reorg with the first block to sync again.
 *
 * What a poll asks of the endpoint, no more: the latest block number; the header of the range's last block, whose
 * parent hash vouches for the last synced block when the range is one block long (the common case when following),
 * else the last synced block's header; with nothing new, the last synced block's header, as a reorg need not
 * lengthen the chain. Then the caller fetches the range's logs. Each read is bounded in time and retried in place
 * (SyncReads), so a failed call costs a short pause and a hung one a timeout, never the range.
 */
export function createBlockWatcher(client: PublicClient, parameters: CreateBlockWatcherParameters): BlockWatcher {
  const confirmations = parameters.confirmations ?? 5n
  const reorgDepth = parameters.reorgDepth ?? 32
  const maxRange = parameters.maxRange
  const reads = parameters.reads ?? new SyncReads()
  const now = parameters.now ?? Date.now
  let syncedBlock = parameters.fromBlock
  let latestBlock = syncedBlock
  let observedAt: number | undefined
  /** Ascending by number, ending at syncedBlock (when not empty); not necessarily contiguous. */
  let remembered: BlockRef[] = (parameters.recentBlocks ?? []).filter((b) => b.number <= syncedBlock).slice(-reorgDepth)

  async function block(number: bigint): Promise<{ hash: Hex; parentHash: Hex; timestamp: bigint } | undefined> {
    try {
      const b = await reads.read(
        'eth_getBlockByNumber',
        () => client.getBlock({ blockNumber: number, includeTransactions: false }),
        (e) => e instanceof BlockNotFoundError,
      )
      return b.hash ? { hash: b.hash, parentHash: b.parentHash, timestamp: b.timestamp } : undefined
    } catch (e) {
      // A block past the tip of a shortened chain: viem says BlockNotFoundError.
      if (e instanceof BlockNotFoundError) return undefined
      throw e
    }
  }

  /**
   * The newest remembered block that stands is the common ancestor. The remembered blocks are not every block (the
   * last two of each range), so the real fork may be later: the resync then applies a few unchanged blocks again,
   * which the core takes as it took them the first time.
   */
  async function findReorg(replaced: BlockRef): Promise<ChainReorg> {
    for (let i = remembered.length - 1; i >= 0; i--) {
      const ref = remembered[i]!
      const current = await block(ref.number)
      if (current?.hash === ref.hash)
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

  /** Whether the last synced block still stands; a reorg when it was replaced. */
  async function tipStands(tip: BlockRef): Promise<ChainReorg | undefined> {
    const current = await block(tip.number)
    return current && current.hash !== tip.hash ? findReorg(tip) : undefined
  }

  async function poll(): Promise<BlockWatcherEvent | undefined> {
    const latest = await reads.read('eth_blockNumber', () => client.getBlockNumber({ cacheTime: 0 }))
    latestBlock = latest
    observedAt = now()
    const head = latest - confirmations
    const tip = remembered.at(-1)

    if (head <= syncedBlock) {
      // Nothing new; still make sure the last synced block stands (a reorg need not lengthen the chain).
      // A block above the head is not checked: the endpoint may just lag, or the fork may not be confirmed yet.
      return tip && tip.number <= head ? tipStands(tip) : undefined
    }

    const limit = typeof maxRange === 'function' ? maxRange() : maxRange
    const toBlock = limit !== undefined && head - syncedBlock > limit ? syncedBlock + limit : head
    const fromBlock = syncedBlock + 1n
    const last = await block(toBlock)
    if (!last) return undefined // the chain shrank under us: look again next time
    if (tip) {
      // One block on top of the last synced one: its parent hash says whether that one stands.
      const reorg = toBlock === tip.number + 1n && last.parentHash === tip.hash ? undefined : await tipStands(tip)
      if (reorg) return reorg
      // The last synced block stands but is not the parent: the new block changed between two reads. Look again.
      if (toBlock === tip.number + 1n && last.parentHash !== tip.hash) return undefined
    }
    const tail: BlockRef[] = []
    // Nothing remembered yet (a new node, or one stored before hashes were kept): the last synced block is read too,
    // so that a reorg of this range can be traced back to a block that stands.
    const link = tip ? undefined : await block(syncedBlock)
    if (link) tail.push({ number: syncedBlock, hash: link.hash, timestamp: link.timestamp })
    // The last block's parent comes with it, for free: one more block a reorg can be traced back to.
    if (toBlock - 1n >= fromBlock) tail.push({ number: toBlock - 1n, hash: last.parentHash })
    tail.push({ number: toBlock, hash: last.hash, timestamp: last.timestamp })
    return { type: 'blocks', fromBlock, toBlock, latestBlock: latest, tail }
  }

  function after(range: BlockRange): BlockRef[] {
    return [...remembered.filter((b) => b.number < range.fromBlock), ...range.tail].filter((b) => b.number <= range.toBlock).slice(-reorgDepth)
  }

  function synced(range: BlockRange): void {
    // An acknowledgement that no longer fits (a reorg came in between) changes nothing.
    if (range.fromBlock !== syncedBlock + 1n) return
    syncedBlock = range.toBlock
    remembered = after(range)
  }

  function blockTimeMs(): number | undefined {
    const timed = remembered.filter((b) => b.timestamp !== undefined)
    const [oldest, newest] = [timed[0], timed.at(-1)]
    if (!oldest || !newest || newest.number <= oldest.number) return undefined
    // At least a second: timestamps are whole seconds, and a dev chain that mines on demand has many blocks in one.
    // Too slow a measure only makes an extrapolated head lag behind the chain, which errs on the safe side.
    return Math.max(1_000, Number(((newest.timestamp! - oldest.timestamp!) * 1_000n) / (newest.number - oldest.number)))
  }

  return {
    poll,
    synced,
    progress: () => {
      const confirmedBlock = latestBlock - confirmations
      return { syncedBlock, confirmedBlock, latestBlock, blocksToSync: confirmedBlock > syncedBlock ? confirmedBlock - syncedBlock : 0n }
    },
    head: () => {
      const blockTime = blockTimeMs()
      return {
        confirmedBlock: latestBlock - confirmations,
        latestBlock,
        ...(observedAt !== undefined ? { at: observedAt } : {}),
        ...(blockTime !== undefined ? { blockTimeMs: blockTime } : {}),
      }
    },
    recentBlocks: () => [...remembered],
    recentBlocksAfter: after,
  }
}
