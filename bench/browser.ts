// The node in a page, as a dApp runs it: the package built into a temporary folder and copied by its own
// `sluice init` into a static site (a plain page with an import map), served by a small static server; Chromium
// headless (playwright-core) calls startNode() with a relay; the peer is `sluice serve` of the same build, reached
// through `sluice relay` of it; anvil with the contracts and TTT registered.
import { mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { type Call, chromiumCpuSeconds, inPage, nodeWorkerMeasure, openBrowserStage, type Paid, type Started } from './browserStage.ts'
import { logged } from '../test/cli/sluiceProcess.ts'
import { cryptoLimit } from './limits.ts'
import { TIMED_IN_SEQUENCE } from './serviceWorkerHops.ts'
import { keepSourceMaps } from './sourceMaps.ts'
import { inFlightTraceFile, summarizeTrace, summaryRows, traceSourceMapsDir } from './traceProfile.ts'
import { busyCoresDuring, fmt, medianOf, percentile, repeat, spread } from './measure.ts'

/** Sequential requests of each kind timed, after the warm-up. */
const REQUESTS = 1000
const WARM_UP_REQUESTS = 100
/** Payments timed, and how many are in flight at once. */
const PAYMENTS = 10_000
const WARM_UP_PAYMENTS = 100
const IN_FLIGHT = 32
/** Payments timed one at a time, through the service worker and on the proxy; mediated ones, after their warm-up. */
const SEQUENTIAL = 200
const MEDIATED = 100
const WARM_UP_MEDIATED = 10
/** Repetitions of each throughput row (the median and the spread are printed). */
const RUNS = 3
/** Restarts timed for each value of waitForSync. */
const RESTARTS = 5
/** Payments made just before a reload with no stop(): their changes are replayed at the next start. */
const PAYMENTS_BEFORE_CRASH = 50
/** Payments timed with and without the off-browser backup (in the node's store after the rows above). */
const BACKUP_PAYMENTS = 2_000
/** Times each key-derivation candidate is timed in a worker, and exportKeystore() in the node's worker. */
const KDF_RUNS = 3

/**
 * Chromium's floor for a service worker: a page whose service worker answers every fetch at once with a constant,
 * timed as the payments are (what any service worker adds, whatever it does).
 */
const FLOOR_SW = `self.addEventListener('install', () => self.skipWaiting())
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()))
self.addEventListener('fetch', (e) => {
  if (new URL(e.request.url).pathname === '/floor/answer') e.respondWith(new Response('{"ok":true}', { headers: { 'content-type': 'application/json' } }))
})`
const FLOOR_PAGE = `<!doctype html><html><body><script>
window.floor = async (warmUp, n) => {
  await navigator.serviceWorker.register('/floor/sw.js', { scope: '/floor/' })
  await navigator.serviceWorker.ready
  // The node's service worker (scope /) controls this page until this one (scope /floor/) claims it.
  while (!navigator.serviceWorker.controller?.scriptURL.endsWith('/floor/sw.js')) await new Promise((r) => setTimeout(r, 10))
  const once = () => fetch('/floor/answer', { method: 'POST', body: '{"amount":"1"}' }).then((r) => r.json())
  return timedInSequence(once, warmUp, n)
}
${TIMED_IN_SEQUENCE}
</script></body></html>`

/** Every thread's tasks, with V8's CPU samples. */
const TRACE_CATEGORIES = ['toplevel', 'devtools.timeline', 'v8.execute', 'disabled-by-default-v8.cpu_profiler']

const p50p99 = (values: number[]) => `${fmt(percentile(values, 50))} / ${fmt(percentile(values, 99))}`

/**
 * `payments`: how many the throughput row times (10,000; fewer only to try the bench out); `only: 'sequential'` stops
 * after the one-at-a-time rows, `only: 'payments'` after the payments' rows (for working on them); `trace`: a file for
 * a Chromium trace of the one-at-a-time payments through the service worker, and beside it (`-in-flight.json`) one of
 * the first throughput run, every thread with V8's CPU samples (`npm run bench -- browser --trace FILE`; open it in
 * chrome://tracing or Perfetto). Their summaries (bench/traceProfile.ts) are rows of the table, and the node worker's
 * source maps are kept beside them (`-sourcemaps/`) for `npx tsx bench/traceProfile.ts FILE [payments]`.
 */
export async function benchBrowser(
  payments = PAYMENTS,
  { only, trace }: { only?: 'sequential' | 'payments'; trace?: string } = {},
): Promise<Record<string, string>> {
  const pageKey = anvilKeys[1]
  const peerKey = anvilKeys[2]
  const address = privateKeyToAddress(pageKey)
  const peerAddress = privateKeyToAddress(peerKey)
  // A second peer, reached through the first (the hub): the page's mediated payments.
  const targetKey = anvilKeys[3]
  const targetAddress = privateKeyToAddress(targetKey)
  const stage = await openBrowserStage({ funded: [pageKey, peerKey], libs: { 'kdf.worker.js': 'bench/kdfWorker.ts' }, persistent: true, sourceMaps: !!trace })
  const { net, browser, pageErrors, start } = stage
  try {
    mkdirSync(join(stage.dir, 'site/floor'))
    writeFileSync(join(stage.dir, 'site/floor/index.html'), FLOOR_PAGE)
    writeFileSync(join(stage.dir, 'site/floor/sw.js'), FLOOR_SW)
    const token = net.token
    const peer = start(stage.serveArgs(peerKey, join(stage.dir, 'peer')))
    const target = start(stage.serveArgs(targetKey, join(stage.dir, 'target')))
    const [[, peerApi], [, targetApi]] = await Promise.all([peer.waitForOutput(/REST API: (\S+)\n/, 60_000), target.waitForOutput(/REST API: (\S+)\n/, 60_000)])
    // The hub's channel to the target, opened over its REST API once both are synced.
    await Promise.all([peer.waitForOutput(logged('Ready: '), 60_000), target.waitForOutput(logged('Ready: '), 60_000)])
    const hubOpened = await fetch(`${peerApi}/channels`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partner_address: targetAddress, token_address: token, total_deposit: String(10 ** 6) }),
    })
    if (hubOpened.status !== 201) throw new Error(`the hub's channel to the target: ${hubOpened.status} ${await hubOpened.text()}`)

    // One context for the whole run, a profile on disk: its IndexedDB keeps the node's store across the restarts, on
    // disk as a person's browser keeps it (Playwright's other contexts keep it in memory).
    const context = stage.profile!
    const { page, open } = await stage.newPage(context)
    const options = {
      rpc: net.anvil.rpcUrl,
      deployment: stage.deploymentPath,
      key: pageKey,
      relay: [stage.relayAddress],
      confirmations: 0,
      environment: 'development',
    }
    const call = async (method: string, path: string, body?: unknown, expected = [200]) => {
      const answer = await inPage<Call>(page, 'call', method, path, body)
      if (!expected.includes(answer.status)) throw new Error(`${method} ${path} answered ${answer.status}: ${JSON.stringify(answer.body)}`)
      return answer.body
    }

    await open()
    const first = await inPage<Started>(page, 'start', options)
    if (first.address !== address) throw new Error(`the node is ${first.address}, not ${address}`)
    await call('PUT', '/api/v1/channels', { partner_address: peerAddress, token_address: token, total_deposit: String(10 ** 6) }, [201])
    const rows: Record<string, string> = {}

    // 0. One payment at a time, as a dApp makes them: the first once the peer has seen the channel, then sequences
    // through the service worker and on the proxy.
    for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 20))) {
      const seen = await fetch(`${peerApi}/channels/${token}/${address}`)
      if (seen.status === 200 && ((await seen.json()) as { state: string }).state === 'opened') break
      if (Date.now() > deadline) throw new Error('the peer has not seen the channel')
    }
    const sequential = async (n: number, via: 'sw' | 'proxy', to = peerAddress) => {
      const paid = await inPage<Omit<Paid, 'seconds'>>(page, 'paySequential', token, to, n, via)
      if (paid.failures > 0) throw new Error(`${paid.failures} of ${n} payments failed, e.g. ${paid.firstFailures.join('; ')}`)
      return paid.latencies
    }
    const firstPayment = await sequential(1, 'sw')
    rows['the first payment, right after the channel opened (its PUT /channels answered, the peer has seen the channel; libp2p started at the PUT) (ms)'] = fmt(
      firstPayment[0]!,
    )
    // A Chromium trace of the sequence through the service worker: the page, the service worker and the node's worker.
    if (trace) await browser.startTracing(undefined, { path: trace, categories: TRACE_CATEGORIES })
    const viaSw = await sequential(SEQUENTIAL, 'sw')
    if (trace) await browser.stopTracing()
    const viaProxy = await sequential(SEQUENTIAL, 'proxy')
    rows[`direct payment latency p50 / p99, one at a time, through the service worker (${SEQUENTIAL} payments, ms)`] = p50p99(viaSw)
    rows['the same on the proxy (node.pay()), p50 / p99 (ms)'] = p50p99(viaProxy)
    rows['what the service worker adds to a payment, p50 (ms)'] = fmt(medianOf(viaSw) - medianOf(viaProxy))
    {
      const floorPage = await context.newPage()
      await floorPage.goto(`${stage.url}floor/`)
      const floor = await floorPage.evaluate(([warmUp, n]) => (window as unknown as { floor: (w: number, n: number) => Promise<number[]> }).floor(warmUp, n), [
        WARM_UP_REQUESTS,
        SEQUENTIAL,
      ] as const)
      await floorPage.close()
      rows["Chromium's floor: a fetch that a service worker answers at once with a constant, p50 / p99 (ms)"] = p50p99(floor)
    }
    // Mediated: the page's node knows the hub's channel to the target from the chain, and routes through it.
    for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 50))) {
      const network = (await call('GET', `/api/v1/tokens/${token}/network`)) as { channels: { participant1: string; participant2: string }[] }
      if (network.channels.some((c) => [c.participant1, c.participant2].includes(targetAddress))) break
      if (Date.now() > deadline) throw new Error("the page's node has not seen the hub's channel to the target")
    }
    await sequential(WARM_UP_MEDIATED, 'sw', targetAddress)
    const mediated = await sequential(MEDIATED, 'sw', targetAddress)
    rows[`mediated payment (page, hub, target) latency p50 / p99, one at a time, through the service worker (${MEDIATED} payments, ms)`] = p50p99(mediated)
    const atTarget = async () =>
      ((await (await fetch(`${targetApi}/payments/${token}?limit=1000`)).json()) as { event: string }[]).filter(
        (e) => e.event === 'EventPaymentReceivedSuccess',
      ).length
    let reached = 0
    for (const deadline = Date.now() + 30_000; reached < WARM_UP_MEDIATED + MEDIATED && Date.now() < deadline; await new Promise((r) => setTimeout(r, 200)))
      reached = await atTarget()
    if (reached !== WARM_UP_MEDIATED + MEDIATED) throw new Error(`the target received ${reached} mediated payments, not ${WARM_UP_MEDIATED + MEDIATED}`)
    if (only === 'sequential') return rows
    // 1. The service worker's cost: the same read through it (fetch) and on the proxy (the request channel).
    const { serviceWorker, proxy } = await inPage<{ serviceWorker: number[]; proxy: number[] }>(
      page,
      'latencies',
      '/api/v1/channels',
      WARM_UP_REQUESTS,
      REQUESTS,
    )
    rows[`GET /channels through the service worker p50 / p99 (ms), ${fmt(REQUESTS)} sequential fetches`] = p50p99(serviceWorker)
    rows['the same on the proxy (node.channels()) p50 / p99 (ms)'] = p50p99(proxy)

    // 2. Direct payments to the headless peer, through the relay.
    const pay = async (n: number, via: 'sw' | 'proxy' = 'sw') => {
      const paid = await inPage<Paid>(page, 'pay', token, peerAddress, n, IN_FLIGHT, via)
      if (paid.failures > 0) throw new Error(`${paid.failures} of ${n} payments failed, e.g. ${paid.firstFailures.join('; ')}`)
      return paid
    }
    await pay(WARM_UP_PAYMENTS)
    const perRun = Math.ceil(payments / RUNS)
    // A run with what it cost every Chromium process (the page, its service worker, the node's worker, the browser).
    const run = async (via: 'sw' | 'proxy') => {
      const cpu = chromiumCpuSeconds()
      const { result: paid, busyCores } = await busyCoresDuring(() => pay(perRun, via))
      return { ...paid, rate: perRun / paid.seconds, cpuMs: ((chromiumCpuSeconds() - cpu) * 1000) / perRun, busyCores }
    }
    // The trace's second file: the first throughput run, 32 in flight.
    let traced = !trace
    const runs = await repeat(RUNS, async () => {
      if (traced) return run('sw')
      traced = true
      await browser.startTracing(undefined, { path: inFlightTraceFile(trace!), categories: TRACE_CATEGORIES })
      return run('sw').finally(() => browser.stopTracing())
    })
    // The same on the proxy: what the service worker's path costs when the node's worker is busy.
    const proxyRuns = await repeat(RUNS, () => run('proxy'))
    const rates = runs.map((r) => r.rate)
    // What the page's signatures allow: libsecp256k1's WASM build, measured now in Node (bench/limits.ts).
    const wasm = await cryptoLimit('wasm')
    rows[`direct payments/s to the peer through the relay, ${IN_FLIGHT} in flight (${fmt(perRun)} payments a run)`] = spread(rates)
    rows[
      `the signatures' limit in the page (WASM: ${fmt(wasm.sign)} signed and ${fmt(wasm.verify)} verified /s, 3 of each a payment), and the median's share of it`
    ] = `${fmt(wasm.paymentsPerSecond)}/s, ${(medianOf(rates) / wasm.paymentsPerSecond).toFixed(2)}`
    rows[`the same on the proxy (node.pay()), ${IN_FLIGHT} in flight`] = spread(proxyRuns.map((r) => r.rate))
    rows["the browser's CPU per payment (every Chromium process), through the service worker / on the proxy, median of the runs (ms)"] =
      `${fmt(medianOf(runs.map((r) => r.cpuMs)))} / ${fmt(medianOf(proxyRuns.map((r) => r.cpuMs)))}`
    rows[
      `the machine's cores busy meanwhile (every process: the browser, the peer, the relay, anvil; of ${availableParallelism()}), through the service worker / on the proxy`
    ] = `${medianOf(runs.map((r) => r.busyCores)).toFixed(2)} / ${medianOf(proxyRuns.map((r) => r.busyCores)).toFixed(2)}`
    const latencies = runs.flatMap((r) => r.latencies)
    rows['payments that succeeded'] = `${latencies.length.toLocaleString('en-US')} of ${(perRun * RUNS).toLocaleString('en-US')}`
    rows[`payment latency p50 / p99 with ${IN_FLIGHT} in flight (ms)`] = p50p99(latencies)
    // Every payment so far: the one-at-a-time ones (the first, through the service worker, on the proxy), the warm-up, the runs.
    const stored = 1 + 2 * SEQUENTIAL + WARM_UP_PAYMENTS + 2 * perRun * RUNS
    // The page sent those and the mediated ones (which the hub forwarded: not its own).
    const sentByPage = stored + WARM_UP_MEDIATED + MEDIATED
    // The peer, in its own process, holds them all (its last Unlocks may still be on their way for a moment).
    let received = 0
    for (const deadline = Date.now() + 30_000; received < stored && Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
      const entries = (await (await fetch(`${peerApi}/payments/${token}?limit=${stored * 2}`)).json()) as { event: string }[]
      received = entries.filter((entry) => entry.event === 'EventPaymentReceivedSuccess').length
    }
    if (received !== stored) throw new Error(`the peer received ${received} payments, not ${stored}`)
    rows['received by the peer (its GET /payments), the one-at-a-time ones and the warm-up included'] = received.toLocaleString('en-US')
    // What bounded the traced payments: each thread's busy time and the node's worker's by what its code is.
    if (trace) {
      keepSourceMaps(stage.sourceMapsDir!, traceSourceMapsDir(trace))
      const oneAtATime = await summarizeTrace(trace, { payments: SEQUENTIAL })
      Object.assign(rows, summaryRows(oneAtATime, `trace of the ${SEQUENTIAL} payments one at a time through the service worker`))
      const inFlight = await summarizeTrace(inFlightTraceFile(trace), { payments: perRun })
      Object.assign(rows, summaryRows(inFlight, `trace of the first run, ${IN_FLIGHT} in flight`))
    }
    if (only === 'payments') return rows

    // 3. Start with the payments stored: stop, reload (same context: IndexedDB stays), time startNode() to the first answer.
    const restarts = async (restartOptions: object) => {
      const times: (Started & { inWorker: { storage: number; node: number } })[] = []
      for (let i = 0; i < RESTARTS; i++) {
        await inPage(page, 'stop')
        await open()
        const started = await inPage<Started>(page, 'start', { ...options, ...restartOptions })
        times.push({ ...started, inWorker: { storage: await nodeWorkerMeasure(page, 'sluice:storage'), node: await nodeWorkerMeasure(page, 'sluice:node') } })
      }
      return times
    }
    const quick = await restarts({ waitForSync: false })
    const history = (await call('GET', `/api/v1/payments?limit=${sentByPage * 2}`)) as { event: string }[]
    const sent = history.filter((entry) => entry.event === 'EventPaymentSentSuccess').length
    if (sent !== sentByPage) throw new Error(`after the restart GET /payments shows ${sent} sent payments, not ${sentByPage}`)
    const synced = await restarts({ waitForSync: true })
    // What libp2p costs there: the same node and store without the relay (the worker then never loads libp2p).
    const local = await restarts({ relay: [], waitForSync: false })
    const label = `startNode() to the first answered GET /address, ${fmt(sentByPage)} stored payments`
    rows[`${label}, waitForSync: false, median of ${RESTARTS} reloads (ms)`] = fmt(medianOf(quick.map((t) => t.answered)))
    rows[`${label}, waitForSync: true (the default), median of ${RESTARTS} (ms)`] = fmt(medianOf(synced.map((t) => t.answered)))
    rows['of which startNode() itself, waitForSync false / true, median (ms)'] =
      `${fmt(medianOf(quick.map((t) => t.startNode)))} / ${fmt(medianOf(synced.map((t) => t.startNode)))}`
    rows['the same from the navigation (page load included), waitForSync false / true, median (ms)'] =
      `${fmt(medianOf(quick.map((t) => t.sinceNavigation)))} / ${fmt(medianOf(synced.map((t) => t.sinceNavigation)))}`
    rows['the same without the relay (libp2p not loaded), waitForSync: false, median (ms)'] = fmt(medianOf(local.map((t) => t.answered)))
    rows["of which in the node's worker (waitForSync false): opening IndexedDB (sluice:storage) / createNode() whole (sluice:node), median (ms)"] =
      `${fmt(medianOf(quick.map((t) => t.inWorker.storage)))} / ${fmt(medianOf(quick.map((t) => t.inWorker.node)))}`
    // 4. The worst case: a reload right after payments, with no stop() and no quiet second, so no snapshot covers
    // them and the next start replays their changes.
    const crashes: Started[] = []
    for (let i = 0; i < RESTARTS; i++) {
      await inPage(page, 'stop')
      await open()
      await inPage<Started>(page, 'start', { ...options, waitForSync: false })
      await pay(PAYMENTS_BEFORE_CRASH)
      await open()
      crashes.push(await inPage<Started>(page, 'start', { ...options, waitForSync: false }))
    }
    rows[`the same with a relay after a reload right after ${PAYMENTS_BEFORE_CRASH} payments, no stop() (their changes replayed), median (ms)`] = fmt(
      medianOf(crashes.map((t) => t.answered)),
    )
    rows['GET /payments after the restart: sent payments listed'] = sent.toLocaleString('en-US')

    // 5. The off-browser backup's cost (docs/decisions/0034): the same payments without and with `backupUrl` (a
    // `sluice backup-server` of the build on 127.0.0.1), the browser's CPU (every Chromium process) per payment, and
    // what was pushed. The store holds the payments above: each copy reads and bounds their sent-proof history.
    const backups = start(['backup-server', '--data-dir', join(stage.dir, 'backups'), '--api', '127.0.0.1:0', '--pushes-per-minute', '100000'])
    const [, backupUrl] = await backups.waitForOutput(logged('Backup server: ([^\\s"]+)[\\s\\S]*Press Ctrl-C to stop\\.'), 60_000)
    const measured = async (extra: object) => {
      await inPage(page, 'stop')
      await open()
      await inPage<Started>(page, 'start', { ...options, ...extra })
      await pay(WARM_UP_PAYMENTS)
      const cpu = chromiumCpuSeconds()
      const paidNow = await pay(BACKUP_PAYMENTS)
      const cpuMs = ((chromiumCpuSeconds() - cpu) * 1000) / BACKUP_PAYMENTS
      return { rate: BACKUP_PAYMENTS / paidNow.seconds, cpuMs, latencies: paidNow.latencies }
    }
    const plain = await measured({})
    const backedUp = await measured({ backupUrl })
    // Once the last copy is pushed: what the copies of these payments cost on the wire.
    let backup: { pushes: number; bytes_pushed: number; behind: boolean; last_push: { bytes: number; ms: number } | null; last_error: unknown }
    for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 200))) {
      backup = ((await call('GET', '/api/v1/settings')) as { backup: typeof backup }).backup
      if ((!backup.behind && backup.last_push) || Date.now() > deadline) break
    }
    if (backup.last_error || !backup.last_push) throw new Error(`the backup did not keep up: ${JSON.stringify(backup)}`)
    const backupPayments = WARM_UP_PAYMENTS + BACKUP_PAYMENTS
    rows[`direct payments/s without / with backupUrl, ${IN_FLIGHT} in flight (${fmt(BACKUP_PAYMENTS)} payments each)`] =
      `${fmt(plain.rate)} / ${fmt(backedUp.rate)}`
    rows['payment latency p50 without / with backupUrl (ms)'] = `${fmt(medianOf(plain.latencies))} / ${fmt(medianOf(backedUp.latencies))}`
    rows["the browser's CPU per payment without / with backupUrl (ms, every Chromium process)"] = `${fmt(plain.cpuMs)} / ${fmt(backedUp.cpuMs)}`
    rows['copies pushed while paying, and payments per copy'] = `${fmt(backup.pushes)}, ${fmt(backupPayments / backup.pushes)}`
    rows['bytes pushed per payment (sealed copies, gzipped)'] = fmt(backup.bytes_pushed / backupPayments)
    rows[`the last copy: bytes, and ms from taking the state to the server's answer (${fmt(sentByPage + backupPayments * 2)} payments in the store)`] =
      `${fmt(backup.last_push.bytes)}, ${fmt(backup.last_push.ms)}`
    await inPage(page, 'stop')

    // 6. The key kept in the page (docs/decisions/0027): what unlocking it costs at each start, in the node's worker
    // ('sluice:key', measured by the worker), and startNode() to the first answer; each kind of key in a profile of
    // its own (a fresh IndexedDB), restarted RESTARTS times after its first start.
    const keyStarts = async (keyOptions: object) => {
      const keyContext = await stage.newContext()
      const { page: keyPage, open: openKeyPage } = await stage.newPage(keyContext)
      const unlocking = () => nodeWorkerMeasure(keyPage, 'sluice:key')
      const startOptions = { ...options, key: undefined, waitForSync: false, ...keyOptions }
      await openKeyPage()
      await inPage<Started>(keyPage, 'start', startOptions)
      const times: { unlock: number; answered: number }[] = []
      for (let i = 0; i < RESTARTS; i++) {
        await inPage(keyPage, 'stop')
        await openKeyPage()
        const { answered } = await inPage<Started>(keyPage, 'start', startOptions)
        times.push({ unlock: await unlocking(), answered })
      }
      return { times, page: keyPage, context: keyContext }
    }
    const given = await keyStarts({ key: generatePrivateKey() })
    await given.context.close()
    const wrapped = await keyStarts({})
    const exports: number[] = []
    for (let i = 0; i < KDF_RUNS; i++) {
      const exported = await inPage<{ ms: number; kdfparams: { n: number } }>(wrapped.page, 'exportKeystore')
      if (exported.kdfparams.n !== 2 ** 18) throw new Error(`exportKeystore() wrote scrypt N = ${exported.kdfparams.n}, not 2^18`)
      exports.push(exported.ms)
    }
    await wrapped.context.close()
    const withPassphrase = await keyStarts({ passphrase: 'a passphrase of the bench' })
    await withPassphrase.context.close()
    const keyLabel = (what: string) =>
      `${what}: unlocking in the node's worker / startNode() to the first answered GET /address, median of ${RESTARTS} reloads (ms)`
    const keyRow = (runs: { unlock: number; answered: number }[]) =>
      `${fmt(medianOf(runs.map((t) => t.unlock)))} / ${fmt(medianOf(runs.map((t) => t.answered)))}`
    rows[keyLabel('the key given (`key`)')] = keyRow(given.times)
    rows[keyLabel('a generated key without a passphrase (AES-GCM, non-extractable key)')] = keyRow(wrapped.times)
    rows[keyLabel('a generated key behind a passphrase (PBKDF2-HMAC-SHA256, 600,000 rounds)')] = keyRow(withPassphrase.times)
    rows[`node.exportKeystore() (scrypt N = 2^18, r = 8, p = 1, in the node's worker), median of ${KDF_RUNS} (ms)`] = fmt(medianOf(exports))
    const kdfs = await inPage<{ name: string; ms: number[] }[]>(page, 'kdf', KDF_RUNS)
    for (const { name, ms } of kdfs) rows[`unlocking a keystore in a worker: ${name}, median of ${KDF_RUNS} (ms)`] = fmt(medianOf(ms))
    return rows
  } catch (e) {
    if (pageErrors.length > 0 && e instanceof Error) e.message += `\npage errors: ${pageErrors.slice(0, 5).join('\n')}`
    throw e
  } finally {
    await stage.close()
  }
}
