// Issue 30's network proof: a network of headless nodes (built as sluice devnet builds its own: createNode, in this
// process, memory storage) on an anvil of its own, a few fee-charging hubs and many leaves with uneven deposits, and
// a seeded sequence of payments that drains directions as it goes. Run twice on the same seed, each on a fresh chain:
// every node in `--routing-mode pfs` with a pathfinding service that charges per request (IOUs really paid), then
// every node in `--routing-mode local` (no service). What each mode achieves is printed side by side.
// The nodes talk over a BroadcastChannel by default; `--transport libp2p` gives each its own libp2p transport through
// one relay, which this 2-core machine could not carry for 24 nodes in one process while other work ran (bench/routing.md).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { keccak256, toHex, type Address } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { createChainClient } from '../src/chain/chainClient.ts'
import { createTransactionQueue } from '../src/chain/transactionQueue.ts'
import { loadNativeSecp256k1 } from '../src/cli/nativeSecp256k1.ts'
import { anvilKeys, startAnvil, type Anvil } from '../src/devnet/anvil.ts'
import { deployContracts } from '../src/devnet/deploy.ts'
import { createDevnetClient } from '../src/devnet/devnetClient.ts'
import { startPathfindingService, type DevnetPathfinding } from '../src/devnet/devnetPathfinding.ts'
import { startTransport, waitForPresence, type DevnetTransport } from '../src/devnet/devnetTransport.ts'
import { registerTokensAndFund } from '../src/devnet/funding.ts'
import { createLogger } from '../src/log/logger.ts'
import { depositToChannel, openChannel } from '../src/node/actions/channels.ts'
import { sendPayment } from '../src/node/actions/payments.ts'
import { createNode } from '../src/node/createNode.ts'
import type { SluiceNode } from '../src/node/sluiceNode.ts'
import { balance, locked } from '../src/protocol/channel/amounts.ts'
import { openMemoryStorage } from '../src/storage/memoryStorage.ts'
import { version } from '../src/version.ts'
import { sleep, withTimeout } from '../src/waits.ts'
import { mulberry32 } from '../test/support/random.ts'
import { fmt, percentile } from './measure.ts'

export type RoutingNetworkOptions = {
  /** How long each mode sends payments, in minutes (the whole part takes about twice this, plus about 1.5 min of setup). */
  minutes: number
  seed: number
  /** Nodes in the network (at least 8); hubs are a sixth of them. */
  nodes: number
  transport: 'libp2p' | 'broadcast'
}

/** 3.5 minutes of payments a mode: with the setup of both, the part ends in about 10 minutes on this 2-core machine. */
export const DEFAULT_NETWORK_OPTIONS: RoutingNetworkOptions = { minutes: 3.5, seed: 30, nodes: 24, transport: 'broadcast' }

/** One payment is started every this many ms (open loop: the same payments in both modes, however fast each goes). */
const PAYMENT_INTERVAL_MS = 500
/** At most this many of the bench's payments in flight: a payment that waits for its lock to expire holds one. */
const MAX_IN_FLIGHT = 16
/** Longer than a lock's life (20 blocks of 1 s) and the service's bound: a payment still running then has hung. */
const PAYMENT_TIMEOUT_MS = 90_000
/** What a routes request costs, in the service token's smallest unit (each node has 10^20 in its UserDeposit). */
const SERVICE_PRICE = 10n ** 15n
const REVEAL_TIMEOUT = 10n
const BLOCK_SECONDS = 1

type Fees = { flat: bigint; proportional: bigint }
type ChannelPlan = { a: number; b: number; depositA: bigint; depositB: bigint }
export type Topology = { nodes: number; hubs: number; channels: ChannelPlan[]; fees: (Fees | undefined)[] }
export type PlannedPayment = { from: number; to: number; amount: bigint }

/**
 * A seeded graph of a few hubs and many leaves: the hubs all linked to each other with large deposits; each leaf
 * opens to one to three hubs depositing 300 to 3,000, while the hub deposits 0 to 4,000 back (uneven: some
 * directions start empty); a few leaf-to-leaf channels. Half the hubs charge fees.
 */
export function topology(seed: number, nodes: number): Topology {
  const random = mulberry32(seed)
  const int = (low: number, high: number) => low + Math.floor(random() * (high - low + 1))
  const hubs = Math.max(2, Math.round(nodes / 6))
  const channels: ChannelPlan[] = []
  const linked = new Set<string>()
  const link = (a: number, b: number, depositA: bigint, depositB: bigint) => {
    const key = `${Math.min(a, b)}-${Math.max(a, b)}`
    if (a === b || linked.has(key)) return
    linked.add(key)
    channels.push({ a, b, depositA, depositB })
  }
  for (let h = 0; h < hubs; h++) for (let k = h + 1; k < hubs; k++) link(h, k, BigInt(int(5_000, 15_000)), BigInt(int(5_000, 15_000)))
  for (let leaf = hubs; leaf < nodes; leaf++) {
    const count = random() < 0.3 ? 1 : random() < 0.7 ? 2 : 3
    for (let k = 0; k < count; k++) link(leaf, int(0, hubs - 1), BigInt(int(300, 3_000)), BigInt(random() < 0.25 ? 0 : int(200, 4_000)))
  }
  for (let k = 0; k < Math.round(nodes / 4); k++) link(int(hubs, nodes - 1), int(hubs, nodes - 1), BigInt(int(300, 2_000)), BigInt(int(300, 2_000)))
  // Every other hub charges per mediation: a flat fee and a proportional one, or a proportional one alone; the rest
  // mediate for free (routing by deposits then has both kinds of way to choose from).
  const fees = Array.from({ length: nodes }, (_, i): Fees | undefined => {
    if (i % 2 === 0 || i >= hubs) return undefined
    return { flat: i % 4 === 1 ? BigInt(int(4, 20)) : 0n, proportional: BigInt(int(2_000, 10_000)) }
  })
  return { nodes, hubs, channels, fees }
}

/**
 * The payments, seeded: payers drawn mostly from a third of the leaves (the spenders) and targets mostly from another
 * third (the merchants), so that money flows one way and drains the directions it takes; 20 to 600 each.
 */
export function paymentPlan(seed: number, net: Topology, count: number): PlannedPayment[] {
  const random = mulberry32(seed * 7 + 1)
  const leaves = Array.from({ length: net.nodes - net.hubs }, (_, i) => net.hubs + i)
  const third = Math.ceil(leaves.length / 3)
  const spenders = leaves.slice(0, third)
  const merchants = leaves.slice(third, 2 * third)
  const pick = (favoured: number[]) => {
    const from = random() < 0.7 ? favoured : leaves
    return from[Math.floor(random() * from.length)]!
  }
  const payments: PlannedPayment[] = []
  while (payments.length < count) {
    const from = pick(spenders)
    const to = pick(merchants)
    if (from === to) continue
    payments.push({ from, to, amount: BigInt(20 + Math.floor(random() * 581)) })
  }
  return payments
}

export type ModeResult = {
  tried: number
  succeeded: number
  failures: Map<string, number>
  /** Payments that succeeded among those started in each quarter of the run. */
  byQuarter: number[]
  /** Each succeeded payment's time, and each failed one's (ms). */
  times: number[]
  failedTimes: number[]
  /** pfs: payments refused by the node's own graph (by deposits) before the service was asked, and those it had a route for. */
  probes: { asked: number; routable: number }
  /** Each routes request's time as the node sees it: the IOU read, signed and the routes asked (ms). */
  serviceTimes: number[]
  /** The cores this process kept busy while the payments ran (every node, the service, the relay; anvil apart). */
  busy: number
  feesPaid: bigint
  feesEarned: bigint
  /** What targets got beyond the amounts (the initiators' safety margins), from their channel balances. */
  targetsKept: bigint
  /** Nodes whose channel balances do not follow from their payment history, and channels whose two ends disagree. */
  mismatches: string[]
  iousPaid: bigint
  routeRequests: number
  routedLocally: number
  errors: string[]
  setupSeconds: number
}

const keyOf = (i: number) => keccak256(toHex(`sluice bench routing node ${i}`))

/** A failure's reason without its details, numbers and addresses, so that the same cause counts as one. */
function reasonOf(error: unknown): string {
  const code = (error as { code?: string }).code ?? 'ERROR'
  // The cause is the first two clauses ("payment failed: lock expired"): what follows names routes and amounts.
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.split(': ').slice(0, 2).join(': ')
  const general = message
    .replace(/0x[0-9a-fA-F]+/g, 'X')
    .replace(/\d+/g, 'N')
    .replace(/\(route [^)]*\)/g, '')
  return `${code}: ${general.length > 160 ? `${general.slice(0, 160)}…` : general}`
}

async function rpc(url: string, method: string, params: unknown[]): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await response.json()) as { error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
}

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms
  while (!ok()) {
    if (performance.now() > deadline) throw new Error(`${what}: not after ${ms / 1000} s`)
    await sleep(100)
  }
}

/** One mode on a fresh chain, relay, (service) and nodes: the network built, the payments sent, the books read. */
export async function runMode(mode: 'pfs' | 'local', net: Topology, plan: PlannedPayment[], options: RoutingNetworkOptions): Promise<ModeResult> {
  const started = performance.now()
  const log = createLogger({ level: 'error', format: 'pretty', write: (line) => console.error(`  [${mode}] ${line}`) })
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-routing-'))
  const nodes: SluiceNode[] = []
  let anvil: Anvil | undefined
  let transport: DevnetTransport | undefined
  let pathfinding: DevnetPathfinding | undefined
  const errors: string[] = []
  const stage = (what: string) => console.error(`  [${mode}] ${((performance.now() - started) / 1000).toFixed(1)} s: ${what}`)
  try {
    anvil = await startAnvil({})
    const rpcUrl = anvil.rpcUrl
    const deployment = await deployContracts(createDevnetClient({ rpcUrl, privateKey: anvilKeys[0] }), { rpcUrl })
    const deployer = await createChainClient({ rpcUrl, privateKey: anvilKeys[0], pollingInterval: 50 })
    const queue = createTransactionQueue(deployer)
    const keys = Array.from({ length: net.nodes }, (_, i) => keyOf(i))
    const addresses = keys.map((k) => privateKeyToAddress(k))
    for (const to of addresses) await queue.send({ to, data: '0x', value: 10n ** 19n, description: `fund ${to}` })
    // Test tokens, and 100 service tokens each in the UserDeposit (what IOUs are paid from).
    await registerTokensAndFund(deployer, queue, deployment, addresses)
    const token = deployment.tokens.TTT!
    transport = await startTransport(options.transport, log)
    if (mode === 'pfs') {
      await startPathfindingService({
        rpcUrl,
        deployment,
        deployer,
        queue,
        transport,
        dataDir,
        port: 0,
        serviceFee: SERVICE_PRICE,
        started: (p) => (pathfinding = p),
        log,
      })
    }
    await deployer.close()
    const secp256k1 = await loadNativeSecp256k1()
    for (const [i, key] of keys.entries()) {
      const fees = net.fees[i]
      const node = await createNode({
        rpc: rpcUrl,
        deployment,
        secp256k1,
        key,
        version,
        storage: openMemoryStorage,
        transport: ({ address }) => transport!.create(key, address),
        confirmations: 0,
        pollingInterval: 500,
        defaultRevealTimeout: REVEAL_TIMEOUT,
        defaultSettleTimeout: 4n * REVEAL_TIMEOUT,
        backoff: { initialMs: 200, maxMs: 2_000 },
        routingMode: mode,
        ...(mode === 'pfs' ? { pathfindingServiceAddress: pathfinding!.api!.server.url } : {}),
        ...(fees ? { flatFee: { [token]: fees.flat }, proportionalFee: { [token]: fees.proportional } } : {}),
      })
      nodes.push(node)
      node.notices.subscribe((n) => {
        if (n.type === 'error')
          errors.push(`${node.address.slice(0, 8)} ${n.where}: ${n.error instanceof Error ? n.error.message.split('\n')[0] : String(n.error)}`)
      })
    }
    stage('chain deployed and funded, nodes created')
    await Promise.all(nodes.map((n) => n.run()))
    stage('nodes synced')
    if (transport.relay) await waitForPresence(transport.libp2p, log)

    stage('nodes see each other')
    // The leaf (or the first hub) opens with its deposit; the other side then deposits its own, one channel at a time per node.
    const client = (i: number) => nodes[i]!.client
    const byOpener = new Map<number, ChannelPlan[]>()
    for (const c of net.channels) byOpener.set(c.a, [...(byOpener.get(c.a) ?? []), c])
    await Promise.all(
      [...byOpener].map(async ([a, list]) => {
        for (const c of list) await openChannel(client(a), { token, partner: addresses[c.b]!, totalDeposit: c.depositA })
      }),
    )
    const head = await nodes[0]!.client.chain.publicClient.getBlockNumber()
    await Promise.all(nodes.map((n) => n.client.waitForBlock(head)))
    const byOther = new Map<number, ChannelPlan[]>()
    for (const c of net.channels) if (c.depositB > 0n) byOther.set(c.b, [...(byOther.get(c.b) ?? []), c])
    await Promise.all(
      [...byOther].map(async ([b, list]) => {
        for (const c of list) await depositToChannel(client(b), { token, partner: addresses[c.a]!, totalDeposit: c.depositB })
      }),
    )
    const last = await nodes[0]!.client.chain.publicClient.getBlockNumber()
    await Promise.all(nodes.map((n) => n.client.waitForBlock(last)))
    stage('channels open and deposited')
    if (pathfinding) {
      const service = pathfinding.service
      await until('the service holds every channel', () => service.status().network.channels >= net.channels.length, 60_000)
      await until('every announcement acknowledged', () => nodes.every((n) => n.client.pathfinder.view().announcements.waiting === 0), 60_000)
    }
    // From now on a block a second, mined or not: a lock that is not claimed expires (20 blocks), as on a real chain.
    await rpc(rpcUrl, 'evm_setAutomine', [false])
    await rpc(rpcUrl, 'evm_setIntervalMining', [BLOCK_SECONDS])
    const setupSeconds = (performance.now() - started) / 1000
    stage(`network ready; ${plan.length} payments, one every ${PAYMENT_INTERVAL_MS} ms`)

    let routedLocally = 0
    // How long the service takes to answer, as a node sees it (its IOU read and raised, the routes asked).
    const serviceTimes: number[] = []
    const probeRequests = new WeakSet<object>()
    for (const { client } of nodes) {
      const pathfinder = client.pathfinder
      const routes = pathfinder.routes.bind(pathfinder)
      pathfinder.routes = async (request) => {
        const t = performance.now()
        try {
          return await routes(request)
        } finally {
          if (!probeRequests.has(request)) serviceTimes.push(performance.now() - t)
        }
      }
    }
    for (const n of nodes)
      n.notices.subscribe((notice) => {
        if (notice.type === 'pathfinding' && notice.what === 'routedLocally') routedLocally++
      })
    const tokenNetwork = Object.entries(nodes[0]!.state.tokenNetworks).find(([, t]) => t.token.toLowerCase() === token.toLowerCase())![0] as Address
    const probes = { asked: 0, routable: 0 }
    const asked = new Map<string, bigint>()
    const failures = new Map<string, number>()
    const times: number[] = []
    const failedTimes: number[] = []
    let succeeded = 0
    const byQuarter = [0, 0, 0, 0]
    const inFlight = new Set<Promise<void>>()
    const t0 = performance.now()
    const cpuBefore = process.cpuUsage()
    for (const [i, p] of plan.entries()) {
      await sleep(Math.max(0, t0 + i * PAYMENT_INTERVAL_MS - performance.now()))
      while (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight)
      const identifier = BigInt(i + 1)
      asked.set(`${addresses[p.to]!.toLowerCase()}:${identifier}`, p.amount)
      const t = performance.now()
      const payment = withTimeout(sendPayment(client(p.from), { token, target: addresses[p.to]!, amount: p.amount, identifier }), PAYMENT_TIMEOUT_MS, () =>
        Object.assign(new Error(`no outcome after ${PAYMENT_TIMEOUT_MS / 1000} s`), { code: 'HUNG' }),
      ).then(
        () => {
          succeeded++
          byQuarter[Math.floor((4 * i) / plan.length)]!++
          times.push(performance.now() - t)
        },
        async (error: unknown) => {
          const reason = reasonOf(error)
          // In pfs mode a payment that the node's own graph cannot route (by deposits) fails before the service is
          // asked: ask it now, to count how many of those it could have routed.
          if (mode === 'pfs' && reason === 'NO_ROUTE: no route to X can carry N') {
            probes.asked++
            const request = { tokenNetwork, target: addresses[p.to]!, amount: p.amount, address: addresses[p.from]! }
            probeRequests.add(request)
            const found = await client(p.from)
              .pathfinder.routes(request)
              .catch(() => undefined)
            if (found?.source === 'service') probes.routable++
          }
          failures.set(reason, (failures.get(reason) ?? 0) + 1)
          failedTimes.push(performance.now() - t)
        },
      )
      const tracked = payment.finally(() => inFlight.delete(tracked))
      inFlight.add(tracked)
    }
    await Promise.all(inFlight)
    const cpu = process.cpuUsage(cpuBefore)
    const busy = (cpu.user + cpu.system) / 1000 / (performance.now() - t0)
    stage(`${succeeded} of ${plan.length} payments succeeded; reading the books`)

    // The books, once no transfer is under way (a lock still held at a mediator waits for its expiry).
    const quiet = () =>
      nodes.every((n) => !Object.keys(n.state.initiators).length && !Object.keys(n.state.mediators).length && !Object.keys(n.state.targets).length)
    await until('every transfer ended', quiet, 120_000).catch((error: unknown) => errors.push(String(error)))
    let feesPaid = 0n
    let feesEarned = 0n
    let targetsKept = 0n
    const mismatches: string[] = []
    for (const [i, node] of nodes.entries()) {
      const history = await node.client.store.payments({ token })
      let expected = 0n
      let received = 0n
      for (const row of history) {
        if (row.event === 'EventPaymentSentSuccess') {
          feesPaid += row.fee ?? 0n
          expected -= row.amount + (row.fee ?? 0n)
        } else if (row.event === 'EventPaymentMediated') {
          feesEarned += row.fee ?? 0n
          expected += row.fee ?? 0n
        } else if (row.event === 'EventPaymentReceivedSuccess') {
          received++
          expected += asked.get(`${node.address.toLowerCase()}:${row.identifier}`) ?? row.amount
        }
      }
      let actual = 0n
      for (const c of net.channels.filter((c) => c.a === i || c.b === i)) {
        const partner = addresses[c.a === i ? c.b : c.a]!
        const ours = node.client.channel(tokenNetwork, partner)
        const theirs = nodes[c.a === i ? c.b : c.a]!.client.channel(tokenNetwork, node.address)
        if (!ours || !theirs) {
          mismatches.push(`node ${i}: channel with ${partner} unknown`)
          continue
        }
        const mine = balance(ours.our, ours.partnerEnd)
        if (i === c.a && (mine !== balance(theirs.partnerEnd, theirs.our) || locked(ours.our) !== 0n || locked(ours.partnerEnd) !== 0n))
          mismatches.push(`channel ${c.a}-${c.b}: the ends disagree or a lock is left`)
        actual += mine - (i === c.a ? c.depositA : c.depositB)
      }
      // A target keeps what the initiator's margin left over; nobody else may end up with more or less than its history says.
      const diff = actual - expected
      if (diff < 0n || (diff > 0n && received === 0n)) mismatches.push(`node ${i}: channel balances ${diff > 0n ? '+' : ''}${diff} against its history`)
      else targetsKept += diff
    }
    const ious = pathfinding ? pathfinding.service.ious() : []
    return {
      tried: plan.length,
      succeeded,
      byQuarter,
      failures,
      times,
      failedTimes,
      serviceTimes,
      probes,
      busy,
      feesPaid,
      feesEarned,
      targetsKept,
      mismatches,
      iousPaid: ious.reduce((sum, s) => sum + s.iou.amount, 0n),
      routeRequests: pathfinding ? pathfinding.service.status().routes.requests : 0,
      routedLocally,
      errors,
      setupSeconds,
    }
  } finally {
    await Promise.all(nodes.map((n) => n.stop().catch(() => {})))
    await pathfinding?.api?.server.close(1_000).catch(() => {})
    await pathfinding?.service.stop().catch(() => {})
    await transport?.relay?.stop().catch(() => {})
    await anvil?.stop()
    await rm(dataDir, { recursive: true, force: true })
  }
}

const share = (part: number, whole: number) => `${whole ? ((100 * part) / whole).toFixed(1) : '0.0'} %`

/** The part's rows: each measure for the mode with the service, then with local routing. */
export async function benchRoutingNetwork(options: RoutingNetworkOptions = DEFAULT_NETWORK_OPTIONS): Promise<Record<string, string>> {
  const net = topology(options.seed, options.nodes)
  const plan = paymentPlan(options.seed, net, Math.max(1, Math.round((options.minutes * 60_000) / PAYMENT_INTERVAL_MS)))
  const results = { pfs: await runMode('pfs', net, plan, options), local: await runMode('local', net, plan, options) }
  const both = (f: (r: ModeResult) => string) => `${f(results.pfs)} / ${f(results.local)}`
  const reasons = [...new Set([...results.pfs.failures.keys(), ...results.local.failures.keys()])].sort()
  const feeShare = (r: ModeResult) => `${r.feesPaid} paid, ${r.feesEarned} earned, ${r.targetsKept} left to the targets`
  const rows: Record<string, string> = {
    network: `${net.nodes} nodes (${net.hubs} hubs, ${net.fees.filter(Boolean).length} charging), ${net.channels.length} channels; seed ${options.seed}; ${options.transport === 'libp2p' ? 'libp2p through one relay' : 'a BroadcastChannel'}`,
    'payments (one every 0.5 s, at most 16 in flight, 20 to 600 each)': `${plan.length} in ${options.minutes} min, the same in each mode`,
    'set-up of the network (s): service / local': both((r) => r.setupSeconds.toFixed(0)),
    'payments succeeded: service / local': both((r) => `${r.succeeded} of ${r.tried} (${share(r.succeeded, r.tried)})`),
  }
  const quarter = Math.ceil(plan.length / 4)
  rows[`  succeeded of the ${quarter} started in each quarter of the run, as directions drain: service; local`] =
    `${results.pfs.byQuarter.join(' / ')}; ${results.local.byQuarter.join(' / ')}`
  for (const reason of reasons) rows[`  failed: ${reason}`] = both((r) => String(r.failures.get(reason) ?? 0))
  const spreadOf = (times: number[]) => (times.length ? `${fmt(percentile(times, 50))} / ${fmt(percentile(times, 95))}` : '-')
  rows['time of a payment that succeeded, median / p95 (ms): service; local'] = `${spreadOf(results.pfs.times)}; ${spreadOf(results.local.times)}`
  rows['time of a payment that failed, median / p95 (ms): service; local'] = `${spreadOf(results.pfs.failedTimes)}; ${spreadOf(results.local.failedTimes)}`
  rows[
    "pfs: payments refused by the payer's own graph (deposits, not balances) before the service was asked; of them, the service had a route for (asked at once, by a probe paid as any request)"
  ] = `${results.pfs.probes.asked}; ${results.pfs.probes.routable}`
  rows["a routes request's time (the IOU read and raised, the routes answered), median / p95 (ms)"] = spreadOf(results.pfs.serviceTimes)
  rows["this process's busy cores while paying (every node and the service, the relay if any; anvil apart): service / local"] = both((r) => r.busy.toFixed(2))
  rows['mediation fees (token units): initiators paid, mediators earned, targets kept (the margins): service; local'] =
    `${feeShare(results.pfs)}; ${feeShare(results.local)}`
  rows['paid to the service: IOUs (service tokens), route requests (the probes above included); payments routed locally by a pfs node'] =
    `${results.pfs.iousPaid} (${results.pfs.iousPaid / SERVICE_PRICE} × ${SERVICE_PRICE}), ${results.pfs.routeRequests} requests; ${results.pfs.routedLocally}`
  rows['books: channel ends that disagree, or nodes whose balances do not follow from their history: service / local'] = both((r) =>
    r.mismatches.length ? r.mismatches.slice(0, 3).join('; ') : 'none',
  )
  rows['errors the nodes reported: service / local'] = both((r) => (r.errors.length ? `${r.errors.length}: ${r.errors.slice(0, 2).join('; ')}` : 'none'))
  return rows
}
