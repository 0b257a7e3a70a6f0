// `npm run bench -- --curves`: how the headless node's cost grows with the work, as Markdown tables. Not part of the
// default run. Two curves, each on its own anvil (npm package) with the real contracts and LevelDB with sync writes:
// the channels the paying node holds (10, 100, 1,000), and the payments `sluice serve` finds in its store (10k, 100k,
// 1M; padded, see benchStoredPayments). Each table ends with a row that reads the curve off its own figures.
import { randomBytes } from 'node:crypto'
import { readdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { serialize } from 'node:v8'
import { type Address, encodeFunctionData, getAddress, type Hex, toHex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { TokenNetwork } from '../src/contracts/index.ts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { createDevnetClient } from '../src/devnet/devnetClient.ts'
import { writeDeployment } from '../src/devnet/deploymentFile.ts'
import type { BrowserContext, Page } from 'playwright-core'
import { jsonParse } from '../src/storage/json.ts'
import { levelLocation, openLevelStorage } from '../src/storage/levelStorage.ts'
import type { StorageIdentity } from '../src/storage/storage.ts'
import { type Devnet, startDevnet } from '../test/integration/support/devnet.ts'
import { logged, startSluice, stopSluice, type SluiceProcess } from '../test/cli/sluiceProcess.ts'
import type { CommitTally } from './nodeWorker.ts'
import { type NodeWorker, spawnNode } from './node.ts'
import { fmt, medianOf, percentile, repeat, spread, timed } from './measure.ts'
import { type BrowserStage, type Call, chromiumProcesses, inPage, openBrowserStage, type Paid, type Started, workerHeapBytes } from './browserStage.ts'
import { HISTORY_KINDS, PAD_BATCH, pad, padSeqBase, paymentShape, type PaymentShape } from './padding.ts'

const progress = (line: string) => process.stderr.write(`curves: ${line}\n`)

/** What is started is stopped in the reverse order, also when a step fails. */
class Cleanup {
  private readonly steps: (() => Promise<unknown>)[] = []
  add(step: () => Promise<unknown>): void {
    this.steps.push(step)
  }
  async run(): Promise<void> {
    for (const step of this.steps.reverse()) await step().catch((e: unknown) => progress(`cleanup: ${String(e)}`))
  }
}

// ---------------------------------------------------------------------------------------------- reading a curve

/** A step's growth from its exponent b (y ~ x^b between two rows) in words. */
function shape(b: number): string {
  if (b < 0.15) return 'constant'
  if (b < 0.8) return 'sublinear'
  if (b <= 1.25) return 'linear'
  return 'worse than linear'
}

/** How `ys` grows over `xs`, from the ratios between successive rows: "name ×a then ×b: words". */
export function growth(name: string, xs: readonly number[], ys: readonly number[]): string {
  const steps = ys.slice(1).map((y, i) => ({ ratio: y / ys[i]!, b: Math.log(y / ys[i]!) / Math.log(xs[i + 1]! / xs[i]!) }))
  const words = steps.map((s) => shape(s.b)).filter((w, i, all) => i === 0 || w !== all[i - 1])
  return `${name} ×${steps.map((s) => s.ratio.toFixed(2)).join(' then ×')}: ${words.join(', then ')}`
}

/** Each series' growth over `xs` (growth()), joined: a table's last row. */
function verdict(xs: readonly number[], series: [string, number[]][]): string {
  return series.map(([name, ys]) => growth(name, xs, ys)).join('; ')
}

// ------------------------------------------------------------------------------------------------ node workers

/** Anvil with the contracts for a payer and its partner, gone (its data too) at the cleanup. */
async function startCurveDevnet(cleanup: Cleanup): Promise<Devnet> {
  const net = await startDevnet([anvilKeys[1], anvilKeys[2]], 10n ** 21n)
  cleanup.add(() => rm(net.dataDir, { recursive: true, force: true }))
  cleanup.add(() => net.stop())
  return net
}

/** A paying node and its partner, each in its own worker, with a funded channel between them. */
async function startPair(net: Devnet, cleanup: Cleanup): Promise<{ payer: NodeWorker; partner: NodeWorker; partnerAddress: Address }> {
  const nodes = await Promise.all(
    [anvilKeys[1], anvilKeys[2]].map((key) =>
      spawnNode({ rpcUrl: net.anvil.rpcUrl, deployment: net.deployment, key, dataDir: net.dataDir, channelName: net.channelName, weigh: true }),
    ),
  )
  for (const n of nodes) cleanup.add(() => n.worker.terminate())
  const [payer, partner] = nodes as [NodeWorker, NodeWorker]
  const partnerAddress = await partner.call<Address>('address')
  await payer.call('openChannel', net.tokenNetwork, partnerAddress, 10n ** 20n)
  const head = await createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] }).getBlockNumber()
  await Promise.all(nodes.map((n) => n.call('waitForBlock', head)))
  return { payer, partner, partnerAddress }
}

/** Stops both nodes cleanly (each leaves a snapshot and closes its store) and ends their threads. */
async function stopPair(nodes: NodeWorker[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.call('stop')))
  await Promise.all(nodes.map((n) => n.worker.terminate()))
}

// ------------------------------------------------------------------------------------------ curve 1: channels

/**
 * `count` honest openChannel transactions between `payer` and fresh addresses that never come online, sent by the
 * deployer (anyone may open a channel between two others) with explicit nonces, many at a time without waiting:
 * anvil mines each as it comes. The payer's node learns of them from the chain.
 */
async function openChannelsTo(net: Devnet, payer: Address, count: number): Promise<void> {
  const client = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
  const account = privateKeyToAccount(anvilKeys[0])
  let nonce = await client.getTransactionCount({ address: account.address, blockTag: 'pending' })
  const { maxFeePerGas, maxPriorityFeePerGas } = await client.estimateFeesPerGas()
  const send = async () => {
    const data = encodeFunctionData({ abi: TokenNetwork.abi, functionName: 'openChannel', args: [payer, getAddress(toHex(randomBytes(20))), 500n] })
    const tx = { chainId: 31337, type: 'eip1559', to: net.tokenNetwork, data, nonce: nonce++, gas: 300_000n, maxFeePerGas, maxPriorityFeePerGas } as const
    return client.sendRawTransaction({ serializedTransaction: await account.signTransaction(tx) })
  }
  const first = nonce
  const hashes: Hex[] = []
  for (let sent = 0; sent < count; sent += 50) hashes.push(...(await Promise.all(Array.from({ length: Math.min(50, count - sent) }, send))))
  if (hashes.length === 0) return
  try {
    await client.waitForTransactionReceipt({ hash: hashes.at(-1)!, timeout: 120_000 })
  } catch (error) {
    // Which one held the rest up, and why: what a failed curve needs to say.
    const mined = await client.getTransactionCount({ address: account.address, blockTag: 'latest' })
    const stuck = hashes[mined - first]
    const pooled =
      stuck !== undefined &&
      (await client
        .getTransaction({ hash: stuck })
        .then(() => true)
        .catch(() => false))
    const block = await client.getBlock()
    throw new Error(
      `${count} openChannel transactions sent (nonces ${first} to ${nonce - 1}), mined up to nonce ${mined - 1}; the next ${pooled ? 'is in the pool' : 'is not in the pool'} with maxFeePerGas ${maxFeePerGas}, the base fee is ${block.baseFeePerGas} at block ${block.number}: ${(error as Error).message.split('\n')[0]}`,
    )
  }
}

/** Payments per run at 32 in flight, and one at a time for the commit sizes (bench/node.ts runs 2,000 too). */
const DIRECT = 2000
const SINGLE = 100
const RUNS = 3

type ChannelPoint = {
  channels: number
  rates: number[]
  latencies: number[]
  heapUsed: number
  rss: number
  snapshotBytes: number
  /** One at a time: what the payer commits per payment, its commits per payment, the largest one (snapshots apart). */
  single: CommitTally
  /** At 32 in flight: the snapshots taken. */
  loaded: CommitTally
}

async function measureChannels(payer: NodeWorker, tokenNetwork: Address, partner: Address, channels: number): Promise<ChannelPoint> {
  await payer.call('payMany', tokenNetwork, partner, 200, 32) // warm-up
  await payer.call('takeCommits')
  const runs = await repeat(RUNS, async () => {
    const t0 = performance.now()
    const latencies = await payer.call<number[]>('payMany', tokenNetwork, partner, DIRECT, 32)
    return { rate: DIRECT / ((performance.now() - t0) / 1000), latencies }
  })
  const loaded = await payer.call<CommitTally>('takeCommits')
  await payer.call('payMany', tokenNetwork, partner, SINGLE, 1)
  const single = await payer.call<CommitTally>('takeCommits')
  const { heapUsed, rss } = await payer.call<{ heapUsed: number; rss: number }>('memory')
  const snapshotBytes = await payer.call<number>('snapshotBytes')
  const rates = runs.map((r) => r.rate)
  return { channels, rates, latencies: runs.flatMap((r) => r.latencies), heapUsed, rss, snapshotBytes, single, loaded }
}

const MB = (bytes: number) => fmt(bytes / 2 ** 20)
const kB = (bytes: number) => fmt(bytes / 1000)

function channelRows(p: ChannelPoint): Record<string, string> {
  const n = p.channels.toLocaleString('en-US')
  const loadedPayments = DIRECT * RUNS
  return {
    [`${n} channels: direct payments/s to one partner, 32 in flight (${DIRECT.toLocaleString('en-US')} a run)`]: spread(p.rates),
    [`${n} channels: latency p50 / p99, 32 in flight (ms)`]: `${fmt(percentile(p.latencies, 50))} / ${fmt(percentile(p.latencies, 99))}`,
    [`${n} channels: the payer's V8 heap in use in its worker thread after a full GC; the whole process's RSS (both nodes, MB)`]: `${MB(p.heapUsed)}; ${MB(p.rss)}`,
    [`${n} channels: the payer's state snapshot as LevelDB stores it ({seq, state}, node:v8, kB)`]: kB(p.snapshotBytes),
    [`${n} channels: what the payer commits per payment, one at a time (rows as LevelDB stores them, snapshots apart): bytes; commits; the largest commit`]: `${fmt(p.single.bytes / SINGLE)} B; ${fmt(p.single.commits / SINGLE)}; ${fmt(p.single.largest)} B`,
    [`${n} channels: snapshots the payer wrote at 32 in flight (after 500 changes, or as many as the state holds channels if more: docs/decisions/0039): per 1,000 payments; their bytes per payment`]: `${fmt((p.loaded.snapshots / loadedPayments) * 1000)}; ${fmt(p.loaded.snapshotBytes / loadedPayments)} B`,
  }
}

function channelVerdict(points: ChannelPoint[]): string {
  const xs = points.map((p) => p.channels)
  const loadedPayments = DIRECT * RUNS
  const series: [string, number[]][] = [
    ['time per payment (1 / median rate)', points.map((p) => 1 / medianOf(p.rates))],
    ['heap', points.map((p) => p.heapUsed)],
    ['snapshot', points.map((p) => p.snapshotBytes)],
    ["one payment's commits", points.map((p) => p.single.bytes)],
    ['snapshot bytes per payment', points.map((p) => p.loaded.snapshotBytes / loadedPayments)],
  ]
  return verdict(xs, series)
}

/** Direct payments to one partner while the payer holds 10, 100 and 1,000 channels (the others' partners never come online). */
export async function benchChannelCurve(): Promise<Record<string, string>> {
  const cleanup = new Cleanup()
  try {
    const net = await startCurveDevnet(cleanup)
    const { payer, partnerAddress } = await startPair(net, cleanup)
    const payerAddress = await payer.call<Address>('address')
    const points: ChannelPoint[] = []
    let held = 1
    for (const channels of [10, 100, 1000]) {
      const t0 = performance.now()
      await openChannelsTo(net, payerAddress, channels - held)
      await payer.call('waitForChannels', channels, 120_000)
      progress(`${channels} channels held (${channels - held} opened and seen by the node in ${fmt((performance.now() - t0) / 1000)} s); paying`)
      held = channels
      points.push(await measureChannels(payer, net.tokenNetwork, partnerAddress, channels))
    }
    const rows = Object.assign({}, ...points.map(channelRows)) as Record<string, string>
    rows['what the curves show (ratio between successive rows, ×10 channels each; read from the exponent of each step)'] = channelVerdict(points)
    return rows
  } finally {
    await cleanup.run()
  }
}

// ------------------------------------------------------------------------------------ curve 2: stored payments

/** Bytes of the files under `dir`. */
async function diskBytes(dir: string): Promise<number> {
  let total = 0
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size
  return total
}

/** The median time of `times` requests, after one unmeasured request when `warmUp` (caches a fresh start left cold). */
async function medianMs(times: number, request: () => Promise<Response>, warmUp = true): Promise<number> {
  if (warmUp) await timed(request)
  return medianOf(await repeat(times, () => timed(request)))
}

/** Whether GET `url` is answered with success (the API answers /status at once, the rest once the node has synced). */
async function answered(url: string): Promise<boolean> {
  try {
    const response = await fetch(url)
    await response.arrayBuffer()
    return response.ok
  } catch {
    return false
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

type ServeProbe = { deploymentFile: string; dataDir: string; cwd: string; key: Hex; token: Address; partner: Address; identifier: bigint }
type ServePoint = { payments: number; starts: number[]; lastPageMs: number; firstPageMs: number; retryMs: number; diskBytes: number }
type Served = { sluice: SluiceProcess; api: string; startMs: number }

/** `sluice serve` as the tests start it, timed from the spawn to its first answered GET /api/v1/address. */
async function startServe(net: Devnet, probe: ServeProbe): Promise<Served> {
  const args = ['serve', '--rpc', net.anvil.rpcUrl, '--deployment', probe.deploymentFile, '--data-dir', probe.dataDir, '--key', probe.key]
  const t0 = performance.now()
  const sluice = startSluice([...args, '--api', '127.0.0.1:0', '--confirmations', '0', '--polling-interval', '100'], probe.cwd)
  try {
    const [, api] = await sluice.waitForOutput(/REST API: (\S+)\n/, 180_000)
    while (!(await answered(`${api}/address`))) await sleep(5)
    return { sluice, api: api!, startMs: performance.now() - t0 }
  } catch (error) {
    await stopSluice(sluice)
    throw error
  }
}

/** Starts of sluice serve at each size (the median is printed: the run's first start also fills tsx's cache). */
const STARTS = 3

/** One store size: start-up STARTS times, then the pages and the retried payment against the last start. */
async function serveAt(net: Devnet, probe: ServeProbe, payments: number): Promise<Omit<ServePoint, 'diskBytes'>> {
  const starts: number[] = []
  for (let i = 1; i < STARTS; i++) {
    const served = await startServe(net, probe)
    starts.push(served.startMs)
    await stopSluice(served.sluice)
  }
  const { sluice, api, startMs } = await startServe(net, probe)
  try {
    starts.push(startMs)
    const page = (offset: number) => () => fetch(`${api}/payments?limit=100&offset=${offset}`)
    const retry = () =>
      fetch(`${api}/payments/${probe.token}/${probe.partner}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ amount: '1', identifier: probe.identifier.toString() }),
      })
    return {
      payments,
      starts,
      lastPageMs: await medianMs(5, page(payments - 100)),
      firstPageMs: await medianMs(5, page(0)),
      // No warm-up: at a million payments each takes seconds, and the first is no colder than the others.
      retryMs: await medianMs(3, retry, false),
    }
  } finally {
    await stopSluice(sluice)
  }
}

const STORED = [10_000, 100_000, 1_000_000]
const REAL = 300

function storedRows(points: ServePoint[], shape: PaymentShape, padMs: number): Record<string, string> {
  const kinds = HISTORY_KINDS.map((k) => `${fmt(shape.perPayment[k])} ${k}`).join(', ')
  const rows: Record<string, string> = {
    [`what one real payment left in the payer's store (${REAL} direct payments, 32 in flight; rows as LevelDB stores them, keys apart)`]: `${kinds}; ${fmt(shape.bytesPerPayment)} B; other rows that grew: ${shape.otherKinds}`,
    [`padding the history with copies of those rows under fresh keys (seq, nonce, secret hash), Storage.commit in batches of ${PAD_BATCH.toLocaleString('en-US')} payments, node stopped: payments written per second`]:
      fmt((STORED.at(-1)! - REAL) / (padMs / 1000)),
  }
  for (const p of points) {
    const n = `${p.payments.toLocaleString('en-US')} payments stored (${REAL} real, the rest padded)`
    rows[`${n}: sluice serve from process start to its first answered GET /api/v1/address (ms, ${STARTS} starts)`] = spread(p.starts)
    rows[`${n}: GET /api/v1/payments?limit=100&offset=${(p.payments - 100).toLocaleString('en-US')} (the last page), median of 5 (ms)`] = fmt(p.lastPageMs)
    rows[`${n}: GET /api/v1/payments?limit=100&offset=0, median of 5 (ms)`] = fmt(p.firstPageMs)
    rows[`${n}: POST /payments again with a paid identifier (answered from the history), median of 3 (ms)`] = fmt(p.retryMs)
    rows[`${n}: the store on disk (MB)`] = MB(p.diskBytes)
  }
  const xs = points.map((p) => p.payments)
  const series: [string, number[]][] = [
    ['start-up', points.map((p) => medianOf(p.starts))],
    ['last page', points.map((p) => p.lastPageMs)],
    ['first page', points.map((p) => p.firstPageMs)],
    ['paid identifier again', points.map((p) => p.retryMs)],
    ['disk', points.map((p) => p.diskBytes)],
  ]
  rows['what the curves show (ratio between successive rows, ×10 payments each; read from the exponent of each step)'] = verdict(xs, series)
  return rows
}

/**
 * `sluice serve` with 10k, 100k and 1M payments in its store. A million real payments would take hours, so: a few
 * hundred real payments between two nodes, then, with the nodes stopped, the store is padded up to each size with
 * copies of the rows those payments left (payments, events, sent proofs, sent locks, received messages) under fresh
 * keys, through the Storage port. The history is padded; the state, the snapshot and the chain are the real ones.
 */
export async function benchStoredPayments(): Promise<Record<string, string>> {
  const cleanup = new Cleanup()
  try {
    const net = await startCurveDevnet(cleanup)
    const deploymentFile = join(net.dataDir, 'deployment.json')
    await writeDeployment(deploymentFile, net.deployment)
    const { payer, partner, partnerAddress } = await startPair(net, cleanup)
    const payerAddress = await payer.call<Address>('address')
    const before = await payer.call<Record<string, number>>('storeCounts')
    await payer.call('payMany', net.tokenNetwork, partnerAddress, REAL, 32)
    await sleep(500) // the last acknowledgements, so that the outbox is empty as in a quiet node
    await stopPair([payer, partner])
    progress(`${REAL} real payments made; padding`)

    const identity: StorageIdentity = { chainId: 31337n, registry: net.deployment.contracts.TokenNetworkRegistry.address, address: payerAddress }
    let storage = await openLevelStorage(identity, { dataDir: net.dataDir })
    cleanup.add(() => storage.close()) // a no-op once closed
    const dump = await storage.exportDump()
    const shape = paymentShape(dump, before, REAL, (row) => serialize(row).length)
    // The retried payment: the oldest real one (a paid identifier is looked for in the history with its target).
    const identifier = dump.payments[0]!.identifier
    const probe: ServeProbe = {
      deploymentFile,
      dataDir: net.dataDir,
      cwd: net.dataDir,
      key: anvilKeys[1],
      token: net.token,
      partner: partnerAddress,
      identifier,
    }
    const seqBase = padSeqBase(dump)
    const real = dump.payments.length
    let padMs = 0
    const points: ServePoint[] = []
    for (const [i, total] of STORED.entries()) {
      const t0 = performance.now()
      await pad(storage, shape, seqBase, (STORED[i - 1] ?? real) - real, total - real, (n) => progress(`padded ${n.toLocaleString('en-US')} payments`))
      padMs += performance.now() - t0
      await storage.close()
      const disk = await diskBytes(levelLocation(identity, net.dataDir))
      progress(`${total.toLocaleString('en-US')} payments stored (padded in ${fmt(padMs / 1000)} s so far); sluice serve`)
      points.push({ ...(await serveAt(net, probe, total)), diskBytes: disk })
      storage = await openLevelStorage(identity, { dataDir: net.dataDir })
    }
    await storage.close()
    return storedRows(points, shape, padMs)
  } finally {
    await cleanup.run()
  }
}

// ------------------------------------------------------------------------------------------ the page's curves

/** The node in a page, as bench/browser.ts runs it, with one `sluice serve` peer through the relay and a channel to it. */
type PageRun = { stage: BrowserStage; page: Page; context: BrowserContext; open(): Promise<void>; address: Address; peer: Address; options: object }

async function startPageRun(stageOptions: { persistent?: boolean }): Promise<PageRun> {
  const [pageKey, peerKey] = [anvilKeys[1], anvilKeys[2]]
  const stage = await openBrowserStage({ funded: [pageKey, peerKey], ...stageOptions })
  try {
    const peerProcess = stage.start(stage.serveArgs(peerKey, join(stage.dir, 'peer')))
    const [, peerApi] = await peerProcess.waitForOutput(/REST API: (\S+)\n/, 60_000)
    await peerProcess.waitForOutput(logged('Ready: '), 60_000)
    const context = stage.profile ?? (await stage.newContext())
    const { page, open } = await stage.newPage(context)
    const options = {
      rpc: stage.net.anvil.rpcUrl,
      deployment: stage.deploymentPath,
      key: pageKey,
      relay: [stage.relayAddress],
      confirmations: 0,
      environment: 'development',
    }
    await open()
    const { address } = await inPage<Started>(page, 'start', options)
    const peer = privateKeyToAccount(peerKey).address
    await pageCall(page, 'PUT', '/api/v1/channels', { partner_address: peer, token_address: stage.net.token, total_deposit: String(10 ** 9) }, 201)
    for (const deadline = Date.now() + 30_000; ; await sleep(50)) {
      const seen = await fetch(`${peerApi}/channels/${stage.net.token}/${address}`)
      if (seen.status === 200 && ((await seen.json()) as { state: string }).state === 'opened') break
      if (Date.now() > deadline) throw new Error("the peer has not seen the page's channel")
    }
    return { stage, page, context, open, address: address as Address, peer, options }
  } catch (e) {
    await stage.close()
    throw e
  }
}

/** `body` with a page run, stopped after it; a failure says what the page reported. */
async function withPageRun<T>(stageOptions: { persistent?: boolean }, body: (run: PageRun) => Promise<T>): Promise<T> {
  const run = await startPageRun(stageOptions)
  try {
    return await body(run)
  } catch (e) {
    if (run.stage.pageErrors.length > 0 && e instanceof Error) e.message += `; page errors: ${run.stage.pageErrors.slice(0, 3).join('; ')}`
    throw e
  } finally {
    await run.stage.close()
  }
}

/** A request through the page's service worker that must be answered with `status`. */
async function pageCall(page: Page, method: string, path: string, body?: unknown, status = 200): Promise<unknown> {
  const answer = await inPage<Call>(page, 'call', method, path, body)
  if (answer.status !== status) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`)
  return answer.body
}

/** `n` direct payments to the peer from the page, 32 in flight, every one answered 200; payments per second. */
async function pagePay(run: PageRun, n: number): Promise<{ rate: number; latencies: number[] }> {
  const paid = await inPage<Paid>(run.page, 'pay', run.stage.net.token, run.peer, n, 32)
  if (paid.failures > 0) throw new Error(`${paid.failures} of ${n} payments from the page failed, e.g. ${paid.firstFailures.join('; ')}`)
  return { rate: n / paid.seconds, latencies: paid.latencies }
}

/** Payments per run at 32 in flight in the page (its rate is a tenth of headless: a run still takes seconds). */
const PAGE_DIRECT = 1000

type PageChannelPoint = { channels: number; rates: number[]; latencies: number[]; heap: number; rendererRss: number; chromiumRss: number }

/**
 * The node's worker's JS heap after a full GC; the resident bytes of the renderer that holds the page (the largest:
 * the page, its service worker and the node's worker live in it, one site) and of every Chromium process.
 */
async function pageMemory(run: PageRun): Promise<{ heap: number; rendererRss: number; chromiumRss: number }> {
  const heap = await workerHeapBytes(run.page, 'node.worker')
  const processes = chromiumProcesses()
  const rendererRss = Math.max(...processes.filter((p) => p.type === 'renderer').map((p) => p.rssBytes))
  return { heap, rendererRss, chromiumRss: processes.reduce((total, p) => total + p.rssBytes, 0) }
}

/** The page's node paying one partner while it holds 10, 100 and 1,000 channels (the others' partners never come online). */
export function benchPageChannelCurve(): Promise<Record<string, string>> {
  return withPageRun({}, async (run) => {
    const points: PageChannelPoint[] = []
    let held = 1
    for (const channels of [10, 100, 1000]) {
      const t0 = performance.now()
      await openChannelsTo(run.stage.net, run.address, channels - held)
      for (const deadline = Date.now() + 180_000; ; await sleep(500)) {
        const seen = ((await pageCall(run.page, 'GET', '/api/v1/channels')) as unknown[]).length
        if (seen >= channels) break
        if (Date.now() > deadline) throw new Error(`the page's node sees ${seen} channels, not ${channels}`)
      }
      progress(`page: ${channels} channels held (${channels - held} opened and seen by the page's node in ${fmt((performance.now() - t0) / 1000)} s); paying`)
      held = channels
      await pagePay(run, 100) // warm-up
      const runs = await repeat(RUNS, () => pagePay(run, PAGE_DIRECT))
      points.push({ channels, rates: runs.map((r) => r.rate), latencies: runs.flatMap((r) => r.latencies), ...(await pageMemory(run)) })
    }
    const rows: Record<string, string> = {}
    for (const p of points) {
      const n = p.channels.toLocaleString('en-US')
      rows[`${n} channels: direct payments/s from the page to one partner, 32 in flight through the service worker (${fmt(PAGE_DIRECT)} a run)`] = spread(
        p.rates,
      )
      rows[`${n} channels: latency p50 / p99 (ms)`] = `${fmt(percentile(p.latencies, 50))} / ${fmt(percentile(p.latencies, 99))}`
      rows[
        `${n} channels: the node's worker's JS heap after a full GC; resident memory of the page's renderer (page, service worker, node's worker) / every Chromium process (MB)`
      ] = `${MB(p.heap)}; ${MB(p.rendererRss)} / ${MB(p.chromiumRss)}`
    }
    const xs = points.map((p) => p.channels)
    rows['what the curves show (ratio between successive rows, ×10 channels each)'] = verdict(xs, [
      ['time per payment (1 / median rate)', points.map((p) => 1 / medianOf(p.rates))],
      ["the worker's heap", points.map((p) => p.heap)],
      ["the renderer's resident memory", points.map((p) => p.rendererRss)],
    ])
    return rows
  })
}

/** Payments stored in the page's IndexedDB at each step (a million would be about 1 GB: see the quota row). */
const PAGE_STORED = [10_000, 100_000]

type PagePoint = { payments: number; starts: number[]; lastPageMs: number; firstPageMs: number; retryMs: number; usage: number; quota: number }

/** The median of `times` requests timed in the page through its service worker, after one unmeasured. */
async function pageMedianMs(page: Page, times: number, method: string, path: string, body?: unknown): Promise<number> {
  const ms = await inPage<number[]>(page, 'timeCalls', method, path, body, times)
  return medianOf(ms.slice(1))
}

/**
 * The page's node with 10k and 100k payments in its IndexedDB, in a Chromium profile on disk (Playwright's usual
 * contexts keep IndexedDB in memory): a few hundred real payments, then the store padded as the headless curve pads
 * LevelDB (bench/padding.ts, run in the page by bench/idbPad.ts) with the node stopped.
 */
export function benchPageStoredPayments(): Promise<Record<string, string>> {
  return withPageRun({ persistent: true }, async (run) => {
    const { page, stage } = run
    const before = await inPage<Record<string, number>>(page, 'exportCounts')
    await pagePay(run, REAL)
    await sleep(500) // the last acknowledgements, so that the outbox is empty as in a quiet node
    const after = await inPage<Record<string, number>>(page, 'exportCounts')
    const shapeText = await inPage<string>(page, 'shape', before, REAL)
    const identifier = await inPage<string>(page, 'firstIdentifier')
    const shape = jsonParse(shapeText) as { shape: PaymentShape }
    await inPage(page, 'stop')
    const real = after.payments!
    let padMs = 0
    const points: PagePoint[] = []
    for (const [i, total] of PAGE_STORED.entries()) {
      padMs += await inPage<number>(page, 'padStore', shapeText, (PAGE_STORED[i - 1] ?? real) - real, total - real)
      progress(`page: ${total.toLocaleString('en-US')} payments stored (padded in ${fmt(padMs / 1000)} s so far); restarting`)
      const starts: number[] = []
      for (let r = 0; r < STARTS; r++) {
        await run.open()
        starts.push((await inPage<Started>(page, 'start', { ...run.options, waitForSync: false })).answered)
        if (r < STARTS - 1) await inPage(page, 'stop')
      }
      const payments = `/api/v1/payments/${stage.net.token}/${run.peer}`
      const point: PagePoint = {
        payments: total,
        starts,
        lastPageMs: await pageMedianMs(page, 6, 'GET', `/api/v1/payments?limit=100&offset=${total - 100}`),
        firstPageMs: await pageMedianMs(page, 6, 'GET', '/api/v1/payments?limit=100&offset=0'),
        retryMs: await pageMedianMs(page, 4, 'POST', payments, { amount: '1', identifier }),
        ...(await inPage<{ usage: number; quota: number }>(page, 'estimate')),
      }
      points.push(point)
      await inPage(page, 'stop')
    }
    const rows: Record<string, string> = {
      [`what one real payment left in the page's store (${REAL} direct payments, 32 in flight; rows as lossless JSON, keys apart)`]: `${HISTORY_KINDS.map((k) => `${fmt(shape.shape.perPayment[k])} ${k}`).join(', ')}; ${fmt(shape.shape.bytesPerPayment)} B; other rows that grew: ${shape.shape.otherKinds}`,
      [`padding in the page (IndexedDB through the Storage port, batches of ${PAD_BATCH.toLocaleString('en-US')} payments, node stopped): payments written per second`]:
        fmt((PAGE_STORED.at(-1)! - real) / (padMs / 1000)),
    }
    for (const p of points) {
      const n = `${p.payments.toLocaleString('en-US')} payments stored (${real} real, the rest padded)`
      rows[`${n}: startNode() after a reload to the first answered GET /api/v1/address, waitForSync false (ms, ${STARTS} reloads)`] = spread(p.starts)
      rows[`${n}: GET /api/v1/payments?limit=100&offset=${(p.payments - 100).toLocaleString('en-US')} through the service worker, median of 5 (ms)`] = fmt(
        p.lastPageMs,
      )
      rows[`${n}: GET /api/v1/payments?limit=100&offset=0, median of 5 (ms)`] = fmt(p.firstPageMs)
      rows[`${n}: POST /payments again with a paid identifier, median of 3 (ms)`] = fmt(p.retryMs)
      rows[`${n}: the origin's storage use / the browser's quota for it (navigator.storage.estimate(), MB)`] = `${MB(p.usage)} / ${MB(p.quota)}`
    }
    const xs = points.map((p) => p.payments)
    rows['what the curves show (ratio between the rows, ×10 payments)'] = verdict(xs, [
      ['start-up', points.map((p) => medianOf(p.starts))],
      ['last page', points.map((p) => p.lastPageMs)],
      ['first page', points.map((p) => p.firstPageMs)],
      ['paid identifier again', points.map((p) => p.retryMs)],
      ['storage use', points.map((p) => p.usage)],
    ])
    return rows
  })
}

/** The --curves tables, as bench/run.ts's parts: a title and the function that measures its rows. */
export const curves = {
  channels: [
    'Curve: channels held by the paying node (2 nodes, each in its own worker thread, LevelDB storage with sync writes, anvil; the other channels are open on-chain to addresses that never come online)',
    benchChannelCurve,
  ],
  stored: [
    'Curve: payments in the store of sluice serve (LevelDB, anvil; a few hundred real payments, the history then padded with copies of their rows under fresh keys)',
    benchStoredPayments,
  ],
  pageChannels: [
    "Curve: channels held by the page's node (Chromium headless, the package as built; a sluice serve peer through a sluice relay; anvil; the other channels are open on-chain to addresses that never come online)",
    benchPageChannelCurve,
  ],
  pageStored: [
    "Curve: payments in the page's IndexedDB (Chromium headless with a profile on disk; a few hundred real payments to a sluice serve peer, the history then padded in the page)",
    benchPageStoredPayments,
  ],
} as const satisfies Record<string, readonly [string, () => Promise<Record<string, string>>]>
