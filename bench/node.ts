// The node runtime end to end: three nodes, each in its own worker thread with LevelDB storage, on anvil.
import { mkdtemp } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import type { Address } from 'viem'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { startDevnet } from '../test/integration/support/devnet.ts'
import { type InspectorProfile, inclusiveMicros, nodeCategoryTotals } from './cpuProfile.ts'
import { cryptoLimit } from './limits.ts'
import { busyCoresDuring, fmt, medianOf, percentile, repeat, spread } from './measure.ts'
import type { CommitTally } from './nodeWorker.ts'

export type NodeWorker = { call<T>(method: string, ...args: unknown[]): Promise<T>; worker: Worker }

/** A node of bench/nodeWorker.ts in its own worker thread, and a call into it. */
export async function spawnNode(workerData: object): Promise<NodeWorker> {
  const worker = new Worker(new URL('./nodeWorker.mjs', import.meta.url), { workerData })
  const pending = new Map<number, (m: { result?: unknown; error?: string }) => void>()
  let id = 0
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject)
    worker.on('message', (m: { ready?: boolean; id?: number; result?: unknown; error?: string }) => {
      if (m.ready) return resolve()
      pending.get(m.id!)?.(m)
      pending.delete(m.id!)
    })
  })
  return {
    worker,
    call: <T>(method: string, ...args: unknown[]) =>
      new Promise<T>((resolve, reject) => {
        pending.set(++id, (m) => (m.error ? reject(new Error(m.error)) : resolve(m.result as T)))
        worker.postMessage({ id, method, args })
      }),
  }
}

/** Repetitions of each throughput row (the median and the spread are printed). */
const RUNS = 3

export async function benchNode(): Promise<Record<string, string>> {
  const keys = [anvilKeys[1], anvilKeys[2], anvilKeys[3]]
  const net = await startDevnet(keys, 10n ** 21n)
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-'))
  const nodes = await Promise.all(
    keys.map((key) => spawnNode({ rpcUrl: net.anvil.rpcUrl, deployment: net.deployment, key, dataDir, channelName: net.channelName })),
  )
  const [a, b, c] = nodes as [NodeWorker, NodeWorker, NodeWorker]
  const [addrB, addrC] = await Promise.all([b.call<Address>('address'), c.call<Address>('address')])
  await a.call('openChannel', net.tokenNetwork, addrB, 10n ** 20n)
  await b.call('openChannel', net.tokenNetwork, addrC, 10n ** 20n)
  const { createPublicClient, http } = await import('viem')
  const head = await createPublicClient({ transport: http(net.anvil.rpcUrl) }).getBlockNumber()
  await Promise.all(nodes.map((n) => n.call('waitForBlock', head)))

  const rows: Record<string, string> = {}
  await a.call('payMany', net.tokenNetwork, addrB, 200, 32) // warm-up
  const direct = 2000
  const runs = await repeat(RUNS, async () => {
    const t0 = performance.now()
    // Each node's thread on its own: a rate bound by one thread shows that thread near 1 while the machine is not.
    const [eluA, eluB] = [a.worker.performance.eventLoopUtilization(), b.worker.performance.eventLoopUtilization()]
    await Promise.all([a.call('takeCommits'), b.call('takeCommits')])
    const { result: latencies, busyCores } = await busyCoresDuring(() => a.call<number[]>('payMany', net.tokenNetwork, addrB, direct, 32))
    const threads = [a.worker.performance.eventLoopUtilization(eluA).utilization, b.worker.performance.eventLoopUtilization(eluB).utilization]
    const ms = performance.now() - t0
    const commits = await Promise.all([a.call<CommitTally>('takeCommits'), b.call<CommitTally>('takeCommits')])
    return { rate: direct / (ms / 1000), latencies, busyCores, threads, commits, ms }
  })
  // The signatures' bound, with this machine's native libsecp256k1 measured now (bench/limits.ts).
  const limit = await cryptoLimit('native')
  const rate = medianOf(runs.map((r) => r.rate))
  rows[`direct payments/s, 32 in flight (${direct} payments a run)`] = spread(runs.map((r) => r.rate))
  rows[`the signatures' limit (native: ${fmt(limit.sign)} signed and ${fmt(limit.verify)} verified /s, 3 of each a payment), and the median's share of it`] =
    `${fmt(limit.paymentsPerSecond)}/s, ${(rate / limit.paymentsPerSecond).toFixed(2)}`
  rows[`the machine's cores busy meanwhile (every process; of ${availableParallelism()}), median run`] = medianOf(runs.map((r) => r.busyCores)).toFixed(2)
  const median = runs.find((r) => r.rate === rate)!
  rows["each node's thread busy meanwhile (its event loop's utilization), payer / payee, median run"] = median.threads.map((u) => u.toFixed(2)).join(' / ')
  // Each node's engine is one loop: a batch transitioned, committed, its effects handed out, then the next batch
  // (group commit: what came meanwhile). Between two commits it works (the profile below says how much) or waits for
  // the next batch, which is mostly the peer's answer to its last one.
  const perNode = (f: (t: CommitTally) => string) => median.commits.map(f).join(' / ')
  rows['commits per payment, payer / payee, median run'] = perNode((t) => (t.commits / direct).toFixed(2))
  rows['mean commit, call to durable (ms; a LevelDB batch with fsync), payer / payee, median run'] = perNode((t) => (t.commitMs / t.commits).toFixed(2))
  rows["each node's engine: share of the run committing + between commits (its own work, then waiting for the next batch), payer / payee, median run"] =
    perNode((t) => `${(t.commitMs / median.ms).toFixed(2)} + ${(t.gapMs / median.ms).toFixed(2)}`)
  const directLatencies = runs.flatMap((r) => r.latencies)
  rows['direct payment latency p50 / p99, 32 in flight (ms)'] = `${fmt(percentile(directLatencies, 50))} / ${fmt(percentile(directLatencies, 99))}`
  // Twice as many in flight: a rate bound by a path's latency would double; one bound by a loop's throughput stays.
  const doubled = await repeat(2, async () => {
    const t0 = performance.now()
    const latencies = await a.call<number[]>('payMany', net.tokenNetwork, addrB, direct, 64)
    return { rate: direct / ((performance.now() - t0) / 1000), p50: percentile(latencies, 50) }
  })
  rows['direct payments/s with 64 in flight, and their latency p50 (2 runs)'] =
    `${doubled.map((r) => fmt(r.rate)).join(', ')}; ${doubled.map((r) => `${fmt(r.p50)} ms`).join(', ')}`

  // What bounds the rate: both nodes' threads profiled through one more run (sampling slows it: its rate is no row).
  const profiled = 1000
  await Promise.all([a.call('profileStart'), b.call('profileStart')])
  await a.call('payMany', net.tokenNetwork, addrB, profiled, 32)
  const profiles = await Promise.all([a.call<InspectorProfile>('profileStop'), b.call<InspectorProfile>('profileStop')])
  const [payer, payee] = profiles.map(nodeCategoryTotals)
  // The engine's loop: its synchronous part (transitions, the commit's planning, effects handed out) on the thread.
  const inLoop = profiles.map((p) => inclusiveMicros(p, (f) => f.functionName === 'loop' && (f.url ?? '').endsWith('/runtime/engine.ts')))
  rows[`profile of a run of ${profiled}, 32 in flight: each thread's time per payment inside the engine's loop (ms), payer / payee`] = inLoop
    .map((us) => (us / 1000 / profiled).toFixed(2))
    .join(' / ')
  const both = (key: string) => (payer!.get(key) ?? 0) + (payee!.get(key) ?? 0)
  const perPayment = (totals: Map<string, number>, key: string) => ((totals.get(key) ?? 0) / 1000 / profiled).toFixed(2)
  for (const key of [...new Set([...payer!.keys(), ...payee!.keys()])].sort((x, y) => both(y) - both(x)))
    rows[`profile of a run of ${profiled}, 32 in flight, each thread's time per payment (ms), payer / payee: ${key}`] =
      `${perPayment(payer!, key)} / ${perPayment(payee!, key)}`

  await a.call('payMany', net.tokenNetwork, addrC, 20, 1) // warm-up
  const mediated = await a.call<number[]>('payMany', net.tokenNetwork, addrC, 300, 1)
  rows['mediated payment A-B-C latency p50 (ms), one at a time'] = fmt(percentile(mediated, 50))
  rows['mediated payment A-B-C latency p99 (ms), one at a time'] = fmt(percentile(mediated, 99))
  const single = await a.call<number[]>('payMany', net.tokenNetwork, addrB, 300, 1)
  rows['direct payment latency p50 (ms), one at a time'] = fmt(percentile(single, 50))

  await Promise.all(nodes.map((n) => n.call('stop')))
  await Promise.all(nodes.map((n) => n.worker.terminate()))
  await net.stop()
  return rows
}
