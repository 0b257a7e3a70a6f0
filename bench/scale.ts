// `npm run bench -- scale` (issue 31, "Beyond one machine"): a hub's payments on LevelDB against PostgreSQL, the hot
// standby's takeover after a kill -9 (docs/decisions/0076), and the monitoring service on one PostgreSQL instance
// and on two (docs/decisions/0077). The bench starts its own PostgreSQL server (test/support/postgres.ts).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { startDevnet } from '../test/integration/support/devnet.ts'
import { startPostgres, type TestPostgres } from '../test/support/postgres.ts'
import { activeApi, standbyApi, startHubWorld, waitForStatus } from '../test/support/standbyHub.ts'
import { fmt, percentile, repeat, spread } from './measure.ts'
import { benchMonitor } from './monitor.ts'
import { spawnNode, type NodeWorker } from './node.ts'

/** Repetitions of each throughput row, as in bench/node.ts. */
const RUNS = 3
/** Payments a run at 32 in flight, as bench/node.ts's "direct payments/s" row. */
const DIRECT = 2000
/** kill -9 of the active hub, each timed. */
const KILLS = 5
/** The hub's lease in the takeover rows (--lease-seconds). */
const LEASE_SECONDS = 1

export async function benchScale(): Promise<Record<string, string>> {
  const pg = await startPostgres()
  try {
    const rows: Record<string, string> = {}
    Object.assign(rows, await paymentRows(pg))
    Object.assign(rows, await takeoverRows())
    Object.assign(rows, await monitorRows(pg))
    return rows
  } finally {
    await pg.stop()
  }
}

/**
 * The same payments as bench/node.ts's rows (direct, 32 in flight; then one at a time) from a payer whose store is
 * LevelDB (sync writes), then from one whose store is PgStorage on the bench's PostgreSQL (each commit a transaction
 * that checks the store's lease first, as `sluice serve --database` keeps it). One payee on LevelDB for both; each
 * node in its own worker thread (bench/nodeWorker.ts), a BroadcastChannel between them, anvil.
 */
async function paymentRows(pg: TestPostgres): Promise<Record<string, string>> {
  const [levelKey, pgKey, payeeKey] = [anvilKeys[1], anvilKeys[2], anvilKeys[3]] as [Hex, Hex, Hex]
  const net = await startDevnet([levelKey, pgKey, payeeKey], 10n ** 21n)
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-bench-scale-'))
  const common = { rpcUrl: net.anvil.rpcUrl, deployment: net.deployment, dataDir, channelName: net.channelName }
  const nodes: NodeWorker[] = []
  try {
    const database = await pg.createDatabase('bench_node')
    nodes.push(
      ...(await Promise.all([
        spawnNode({ ...common, key: levelKey }),
        spawnNode({ ...common, key: pgKey, database }),
        spawnNode({ ...common, key: payeeKey }),
      ])),
    )
    const [onLevel, onPg, payee] = nodes as [NodeWorker, NodeWorker, NodeWorker]
    const payeeAddress = privateKeyToAddress(payeeKey)
    await onLevel.call('openChannel', net.tokenNetwork, payeeAddress, 10n ** 20n)
    await onPg.call('openChannel', net.tokenNetwork, payeeAddress, 10n ** 20n)
    await payee.call('waitForChannels', 2, 30_000)

    const rows: Record<string, string> = {}
    for (const [store, payer] of [
      ['LevelDB', onLevel],
      ['PostgreSQL', onPg],
    ] as const) {
      await payer.call('payMany', net.tokenNetwork, payeeAddress, 200, 32) // warm-up
      const runs = await repeat(RUNS, async () => {
        const t0 = performance.now()
        const latencies = await payer.call<number[]>('payMany', net.tokenNetwork, payeeAddress, DIRECT, 32)
        return { rate: DIRECT / ((performance.now() - t0) / 1000), latencies }
      })
      const latencies = runs.flatMap((r) => r.latencies)
      rows[`payer on ${store}: direct payments/s, 32 in flight (${DIRECT} payments a run)`] = spread(runs.map((r) => r.rate))
      rows[`payer on ${store}: latency p50 / p99, 32 in flight (ms)`] = `${fmt(percentile(latencies, 50))} / ${fmt(percentile(latencies, 99))}`
      await payer.call('payMany', net.tokenNetwork, payeeAddress, 20, 1) // warm-up
      const single = await payer.call<number[]>('payMany', net.tokenNetwork, payeeAddress, 300, 1)
      rows[`payer on ${store}: latency p50 / p99, one at a time (ms)`] = `${fmt(percentile(single, 50))} / ${fmt(percentile(single, 99))}`
    }
    return rows
  } finally {
    await Promise.all(nodes.map((n) => n.call('stop').catch(() => {})))
    await Promise.all(nodes.map((n) => n.worker.terminate()))
    await net.stop()
    await rm(dataDir, { recursive: true, force: true })
    await rm(net.dataDir, { recursive: true, force: true })
  }
}

/**
 * The hot standby's takeover (docs/decisions/0076): a hub's two `sluice serve --database` processes (one key, one
 * database, --lease-seconds 1) and a partner `sluice serve` on LevelDB with a channel, on anvil, a relay and the
 * bench's own PostgreSQL (test/support/standbyHub.ts). The active hub is killed with SIGKILL `KILLS` times; each time,
 * the time from the kill to the standby's GET /status answering role active, and to its first payment to the partner
 * answered 200 (tried every 20 ms once it is active). The dead one is started again as the next standby.
 */
async function takeoverRows(): Promise<Record<string, string>> {
  const [hubKey, peerKey] = [anvilKeys[5], anvilKeys[6]] as [Hex, Hex]
  const peer = privateKeyToAddress(peerKey)
  const world = await startHubWorld([hubKey, peerKey])
  try {
    const { net, pg, serveArgs, startServe, tempDir } = world
    const hubArgs = serveArgs(hubKey, ['--database', await pg.createDatabase('bench_standby'), '--lease-seconds', String(LEASE_SECONDS)])
    let active = startServe(hubArgs)
    let api = await activeApi(active)
    await waitForStatus(api, { status: 'ready', role: 'active' })
    let standby = startServe(hubArgs)
    await standbyApi(standby)
    const partner = startServe(serveArgs(peerKey, ['--data-dir', tempDir()]))
    await waitForStatus(await activeApi(partner), { status: 'ready' })
    const opened = await send('PUT', `${api}/channels`, { partner_address: peer, token_address: net.token, total_deposit: '1000000' })
    if (opened.status !== 201) throw new Error(`opening the hub's channel answered ${opened.status}`)

    let identifier = 0
    /** Pays the partner through `at` until one payment is answered 200 (20 ms apart), within 30 s. */
    const paid = async (at: string, what: string) => {
      const deadline = performance.now() + 30_000
      while ((await send('POST', `${at}/payments/${net.token}/${peer}`, { amount: '1', identifier: String(++identifier) })).status !== 200) {
        if (performance.now() > deadline) throw new Error(`no payment through the hub within 30 s ${what}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    }
    await paid(api, 'once the channel was open')
    const toActive: number[] = []
    const toPaid: number[] = []
    for (let kill = 0; kill < KILLS; kill++) {
      const killedAt = performance.now()
      active.child.kill('SIGKILL')
      await active.exited
      api = await activeApi(standby, 30_000)
      await waitForStatus(api, { status: 'ready', role: 'active' }, 30_000)
      toActive.push(performance.now() - killedAt)
      await paid(api, `of kill ${kill + 1}`)
      toPaid.push(performance.now() - killedAt)
      ;[active, standby] = [standby, startServe(hubArgs)]
      await standbyApi(standby)
    }
    const range = (ms: number[]) => {
      const sorted = [...ms].sort((a, b) => a - b)
      return `${fmt(sorted[0]!)} / ${fmt(percentile(ms, 50))} / ${fmt(sorted.at(-1)!)}`
    }
    return {
      [`hot standby (--lease-seconds ${LEASE_SECONDS}), kill -9 of the active hub to the standby's /status role active, min / median / max of ${KILLS} (ms)`]:
        range(toActive),
      [`  to its first payment answered 200, min / median / max of ${KILLS} (ms)`]: range(toPaid),
    }
  } finally {
    await world.stop()
  }
}

async function send(method: string, url: string, body: unknown): Promise<{ status: number }> {
  const r = await fetch(url, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) })
  await r.arrayBuffer()
  return { status: r.status }
}

/**
 * The monitoring service's requests per second on PostgreSQL, one instance and two on one database
 * (docs/decisions/0077: the leader takes the requests, the other follows the database and stands by), measured as
 * bench/monitor.ts measures one instance on LevelDB (`npm run bench -- monitor`). The rows it takes from that bench
 * are its rate and its time to the acknowledgement.
 */
async function monitorRows(pg: TestPostgres): Promise<Record<string, string>> {
  const rows: Record<string, string> = {}
  for (const [label, choice] of [
    ['one instance on LevelDB (as `npm run bench -- monitor`, for comparison)', undefined],
    ['one instance on PostgreSQL', { database: await pg.createDatabase('bench_monitor_1'), instances: 1 }],
    [
      'two instances on one PostgreSQL database (the leader takes the requests, the other follows)',
      { database: await pg.createDatabase('bench_monitor_2'), instances: 2 },
    ],
  ] as const) {
    const measured = Object.entries(await benchMonitor(choice))
    const row = (start: string) => {
      const found = measured.find(([k]) => k.startsWith(start))
      if (!found) throw new Error(`bench/monitor.ts has no row starting with "${start}"`)
      return found[1]
    }
    rows[`monitoring service, ${label}: RequestMonitoring validated, stored and acknowledged per second`] = row('RequestMonitoring validated')
    rows['  time to the acknowledgement, p50 / p99 (ms, 100 at once)'.replace('time', `${label.split(' (')[0]}: time`)] = row('  time to the acknowledgement')
  }
  return rows
}
