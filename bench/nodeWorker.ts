// A Sluice node in its own worker thread, driven by the benchmarks (bench/node.ts, bench/curves.ts) over a tiny
// request/response protocol. With `weigh` (the curves), its store is wrapped to weigh each commit as LevelStorage
// encodes it (node:v8, one row at a time): a cost the throughput rows of bench/node.ts must not carry. With
// `database` (a postgres:// URL), its store is PgStorage there (bench/scale.ts), as `sluice serve --database` keeps it.
import { serialize, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { parentPort, workerData } from 'node:worker_threads'
import type { Address, Hex } from 'viem'
import type { Deployment } from '../src/chain/deployment.ts'
import { loadNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import { openChannelOnChain } from '../src/node/actions/channels.ts'
import { sendPayment } from '../src/node/actions/payments.ts'
import { createNode } from '../src/node/createNode.ts'
import { openLevelStorage } from '../src/storage/levelStorage.ts'
import { openPgStorage } from '../src/storage/pgStorage.ts'
import { openPool } from '../src/storage/postgres/pool.ts'
import type { Commit, Storage } from '../src/storage/storage.ts'
import { createBroadcastChannelTransport } from '../src/transport/broadcastChannelTransport.ts'
import { type InspectorProfile, startCpuProfile } from './cpuProfile.ts'

const { rpcUrl, deployment, key, dataDir, channelName, weigh, database } = workerData as {
  rpcUrl: string
  deployment: Deployment
  key: Hex
  dataDir: string
  channelName: string
  weigh?: boolean
  database?: string
}

// A heap figure means something only right after a full collection; the flag must be set before `gc` is looked up.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/**
 * What the node committed since the last `takeCommits`: how many commits and their wall time (from the call to the
 * durable write, fsync included); the time between one commit's end and the next one's call while payments run
 * (under `BUSY_GAP_MS`: the engine's own work and its wait for the next batch; a longer gap is the node idle); and,
 * when `weigh`, their value bytes (node:v8, one row at a time, keys apart).
 */
export type CommitTally = {
  commits: number
  commitMs: number
  gaps: number
  gapMs: number
  bytes: number
  largest: number
  snapshots: number
  snapshotBytes: number
}
const emptyTally = (): CommitTally => ({ commits: 0, commitMs: 0, gaps: 0, gapMs: 0, bytes: 0, largest: 0, snapshots: 0, snapshotBytes: 0 })
let tally = emptyTally()

const rowBytes = (rows: readonly unknown[] | undefined) => (rows ?? []).reduce<number>((sum, row) => sum + serialize(row).length, 0)

/** The bytes LevelStorage writes for a commit's rows besides the snapshot (each row is one node:v8 value). */
function commitBytes(batch: Commit): number {
  return (
    rowBytes(batch.changes) +
    rowBytes(batch.events) +
    rowBytes(batch.payments) +
    rowBytes(batch.chainEvents) +
    rowBytes(batch.outbox?.put) +
    rowBytes(batch.transactions?.put) +
    rowBytes(batch.sentProofs) +
    rowBytes(batch.sentLocks) +
    rowBytes(batch.received) +
    (batch.meta ? serialize(batch.meta).length : 0)
  )
}

let store: Storage | undefined
/** When the last commit ended, and the longest gap after it that counts as one between a run's commits. */
let lastEnd: number | undefined
const BUSY_GAP_MS = 50

/** The node's store, its commits counted and timed, and weighed before they go in when `weigh`. */
function kept(storage: Storage): Storage {
  store = storage
  const commit = storage.commit.bind(storage)
  storage.commit = async (batch: Commit) => {
    tally.commits++
    if (weigh) {
      const bytes = commitBytes(batch)
      tally.bytes += bytes
      tally.largest = Math.max(tally.largest, bytes)
      if (batch.snapshot) {
        tally.snapshots++
        tally.snapshotBytes += serialize(batch.snapshot).length
      }
    }
    const t0 = performance.now()
    if (lastEnd !== undefined && t0 - lastEnd < BUSY_GAP_MS) {
      tally.gapMs += t0 - lastEnd
      tally.gaps++
    }
    try {
      return await commit(batch)
    } finally {
      lastEnd = performance.now()
      tally.commitMs += lastEnd - t0
    }
  }
  return storage
}

const secp256k1 = await loadNativeSecp256k1()
const node = await createNode({
  rpc: rpcUrl,
  deployment,
  key,
  secp256k1,
  storage: async (identity) =>
    kept(
      database
        ? // The store's lease as sluice serve takes it (5 s, its default), checked in every commit.
          await openPgStorage(identity, { pool: openPool(database, { name: 'sluice bench node' }), ownsPool: true, lease: { durationMs: 5000 } })
        : await openLevelStorage(identity, { dataDir }),
    ),
  transport: ({ address }) => createBroadcastChannelTransport({ address, channelName }),
  confirmations: 0,
  pollingInterval: 100,
  defaultRevealTimeout: 50,
  defaultSettleTimeout: 500,
  backoff: { initialMs: 2000, maxMs: 10_000 },
})
await node.run()

let stopProfile: (() => Promise<InspectorProfile>) | undefined

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

type Request = { id: number; method: string; args: unknown[] }
const methods: Record<string, (...args: never[]) => Promise<unknown>> = {
  address: async () => node.address,
  openChannel: async (tokenNetwork: Address, partner: Address, totalDeposit: bigint) => {
    await openChannelOnChain(node.client, { tokenNetwork, partner, totalDeposit })
  },
  waitForBlock: async (block: bigint) => node.client.waitForBlock(block),
  /** Resolves once the node holds `count` channels (it learns of channels others opened from the chain). */
  waitForChannels: async (count: number, timeoutMs: number) => {
    const deadline = performance.now() + timeoutMs
    while (Object.keys(node.state.channels).length < count) {
      if (performance.now() > deadline)
        throw new Error(`the node holds ${Object.keys(node.state.channels).length} channels, not ${count}, after ${timeoutMs} ms`)
      await sleep(50)
    }
  },
  /** `count` payments to `target` with `inFlight` at a time; returns each one's latency in ms. */
  payMany: async (tokenNetwork: Address, target: Address, count: number, inFlight: number) => {
    const latencies: number[] = []
    const token = node.state.tokenNetworks[tokenNetwork]!.token
    let next = 0
    const lane = async () => {
      while (next < count) {
        next++
        const t0 = performance.now()
        await sendPayment(node.client, { token, target, amount: 1n })
        latencies.push(performance.now() - t0)
      }
    }
    await Promise.all(Array.from({ length: inFlight }, lane))
    return latencies
  },
  cpu: async () => process.cpuUsage(),
  /** V8's sampling profiler on this thread (bench/node.ts profiles each node's thread during a run). */
  profileStart: async () => {
    stopProfile = await startCpuProfile()
  },
  /** The profile since `profileStart`: nodes, samples and their time deltas, as the inspector gives them. */
  profileStop: async () => stopProfile!(),
  /** The tally since the last call (no bytes unless `weigh`), and a new one from now. */
  takeCommits: async () => {
    const taken = tally
    tally = emptyTally()
    return taken
  },
  /** The state as a snapshot row holds it ({seq, state}, node:v8), in bytes. */
  snapshotBytes: async () => serialize({ seq: 0, state: node.state }).length,
  /** This worker's V8 heap in use after a full collection, and the whole process's resident set (bytes). */
  memory: async () => {
    gc()
    return { heapUsed: process.memoryUsage().heapUsed, rss: process.memoryUsage().rss }
  },
  /** How many rows of each kind the store holds (from a full dump: small stores only). */
  storeCounts: async () => {
    const dump = await store!.exportDump()
    return Object.fromEntries(Object.entries(dump).flatMap(([k, v]) => (Array.isArray(v) ? [[k, v.length]] : [])))
  },
  stop: async () => node.stop(),
}

parentPort!.on('message', async ({ id, method, args }: Request) => {
  try {
    parentPort!.postMessage({ id, result: await methods[method]!(...(args as never[])) })
  } catch (error) {
    parentPort!.postMessage({ id, error: String(error) })
  }
})
parentPort!.postMessage({ ready: true })
