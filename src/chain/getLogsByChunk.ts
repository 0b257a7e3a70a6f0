import { formatLog, numberToHex, type Address, type Hex, type Log, type PublicClient } from 'viem'
import type { ChainRpcError } from './errors.ts'
import { isLogRangeRefusal } from './rpcFailure.ts'
import { ReadTimeoutError, SyncReads } from './syncReads.ts'

export type LogChunkSizeParameters = {
  /** Blocks asked for in the first eth_getLogs; 100,000 by default (as Raiden's getLogsByChunk$). */
  initial?: bigint
  /** The smallest range tried before giving up; 100 by default. */
  min?: bigint
  /** The largest range ever asked for; `initial` by default. */
  max?: bigint
  /** Consecutive successes after which the range doubles again; 4 by default. */
  growAfter?: number
}

/**
 * How many blocks one eth_getLogs asks for, adapted to what the endpoint accepts: halved on a refusal (too
 * many results, range too large, a range that times out), doubled back after a few successes. Keep one per endpoint so
 * what was learnt carries over from one sync to the next.
 */
export class LogChunkSize {
  readonly min: bigint
  readonly max: bigint
  readonly growAfter: number
  private size: bigint
  private successes = 0

  constructor({ initial = 100_000n, min = 100n, max = initial, growAfter = 4 }: LogChunkSizeParameters = {}) {
    if (min < 1n || max < min) throw new RangeError(`invalid log chunk bounds ${min}..${max}`)
    this.min = min
    this.max = max
    this.growAfter = growAfter
    this.size = clamp(initial, min, max)
  }

  get current(): bigint {
    return this.size
  }

  succeeded(): void {
    if (++this.successes < this.growAfter) return
    this.successes = 0
    this.size = clamp(this.size * 2n, this.min, this.max)
  }

  /** Halves below the span that failed; false when the span was already at the floor (give up). */
  failed(span: bigint): boolean {
    this.successes = 0
    if (span <= this.min) return false
    this.size = clamp(span / 2n, this.min, this.max)
    return true
  }
}

export type GetLogsByChunkParameters = {
  address: readonly Address[]
  /** topics[0] alternatives: the event selectors wanted. */
  eventSelectors: readonly Hex[]
  fromBlock: bigint
  toBlock: bigint
  chunkSize: LogChunkSize
  /** How the endpoint is read (each call bounded in time, retried in place); a default SyncReads when absent. */
  reads?: SyncReads
  /** Called after each chunk with the last block it covered. */
  onChunk?: (toBlock: bigint, logs: Log[]) => void
}

/**
 * One eth_getLogs over as much of [fromBlock, toBlock] as the chunk size allows. Returns the logs and the last
 * block covered. A range refused for its size (too many results, too long: isLogRangeRefusal, docs/decisions/0052), or
 * one that took longer than a read may (`reads`), is asked again smaller at once; any other failure (a 429, a 5xx, a
 * reset, an endpoint down) is no reason to shrink, and is asked again after a short pause while the retry budget lasts,
 * so a failing call costs a pause, not the sync (docs/decisions/0055). No viem retry: what is asked again is decided
 * here. Only what was asked for is kept (`isAnswer`); the logs may still repeat and come in any order
 * (docs/decisions/0028).
 */
export async function getLogsChunk(
  client: PublicClient,
  { address, eventSelectors, fromBlock, toBlock, chunkSize, reads = new SyncReads() }: Omit<GetLogsByChunkParameters, 'onChunk'>,
): Promise<{ logs: Log[]; toBlock: bigint }> {
  const started = reads.now()
  let pauses = 0
  for (;;) {
    const end = min(toBlock, fromBlock + chunkSize.current - 1n)
    try {
      const logs = await reads.attempt('eth_getLogs', () =>
        client.request(
          {
            method: 'eth_getLogs',
            params: [{ address: [...address], topics: [[...eventSelectors]], fromBlock: numberToHex(fromBlock), toBlock: numberToHex(end) }],
          },
          { retryCount: 0 },
        ),
      )
      chunkSize.succeeded()
      const wanted = { addresses: new Set(address.map((a) => a.toLowerCase())), selectors: new Set(eventSelectors.map((t) => t.toLowerCase())) }
      return { logs: logs.map((log) => formatLog(log)).filter((log) => isAnswer(log, { ...wanted, fromBlock, toBlock: end })), toBlock: end }
    } catch (e) {
      const tooBig = isLogRangeRefusal(e) || (e instanceof Error && e.cause instanceof ReadTimeoutError)
      if (tooBig && chunkSize.failed(end - fromBlock + 1n)) continue
      if (!(await reads.pauseBeforeRetry(started, pauses++))) throw reads.gaveUp(e as ChainRpcError)
    }
  }
}

/**
 * Whether a log answers the request: mined in the range asked for (block number, block hash, transaction hash
 * and log index all present), from an address and of an event asked for, and not `removed` (a log a reorg took
 * back). An endpoint that returns anything else is careless or lying; what it adds is dropped, not applied.
 */
function isAnswer(log: Log, asked: { addresses: ReadonlySet<string>; selectors: ReadonlySet<string>; fromBlock: bigint; toBlock: bigint }): boolean {
  const { blockNumber, blockHash, transactionHash, logIndex, removed } = log
  if (removed || blockNumber === null || blockHash === null || transactionHash === null || logIndex === null) return false
  if (blockNumber < asked.fromBlock || blockNumber > asked.toBlock) return false
  const selector = Array.isArray(log.topics) ? log.topics[0] : undefined
  return (
    typeof log.address === 'string' &&
    asked.addresses.has(log.address.toLowerCase()) &&
    typeof selector === 'string' &&
    asked.selectors.has(selector.toLowerCase())
  )
}

/** The logs of [fromBlock, toBlock] for the addresses and events, fetched in adaptive chunks, chunk after chunk (as getLogsChunk keeps them). */
export async function getLogsByChunk(client: PublicClient, parameters: GetLogsByChunkParameters): Promise<Log[]> {
  const all: Log[] = []
  let from = parameters.fromBlock
  while (from <= parameters.toBlock) {
    const { logs, toBlock } = await getLogsChunk(client, { ...parameters, fromBlock: from })
    all.push(...logs)
    parameters.onChunk?.(toBlock, logs)
    from = toBlock + 1n
  }
  return all
}

const min = (a: bigint, b: bigint) => (a < b ? a : b)
const clamp = (v: bigint, lo: bigint, hi: bigint) => (v < lo ? lo : v > hi ? hi : v)
