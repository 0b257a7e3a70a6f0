// The node in a page in each engine a dApp's users have (test/support/engines/: Chromium and Firefox through
// puppeteer-core, WebKitGTK through WebDriver under Xvfb), side by side, so that a regression in one engine shows:
// the start-up, payments one at a time, and payments 32 in flight, through the service worker. One site (the
// package as built, `sluice init`, anvil, a relay, a `sluice serve` peer); each engine's node has its own key and
// its own channel to the peer.
import { join } from 'node:path'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { logged } from '../test/cli/sluiceProcess.ts'
import { chosenEngines, type EngineName, launchEngine, type Tab } from '../test/support/engines/engine.ts'
import { openSite } from '../test/support/engines/site.ts'
import { SITE_PAGE } from '../test/support/engines/sitePage.ts'
import { fmt, medianOf, percentile } from './measure.ts'

/** Restarts timed (a reload, then startNode on a node that has its store and a controlling service worker). */
const RESTARTS = 5
const WARM_UP = 20
const SEQUENTIAL = 200
const IN_FLIGHT = 32
const THROUGHPUT = 2_000

type Started = { address: string; startNode: number; answered: number; sinceNavigation: number }
type Paid = { seconds?: number; latencies: number[]; failures: number; firstFailures: string[] }

const inTab = <T>(tab: Tab, method: string, ...args: unknown[]) => tab.evaluate<T>(`window.site.${method}(...${JSON.stringify(args)})`, 600_000)
const p50p99 = (values: number[]) => `${fmt(percentile(values, 50))} / ${fmt(percentile(values, 99))}`

/** One column per engine: each row's value is the engines' figures in the order of the title's columns. */
export async function benchEngines(): Promise<Record<string, string>> {
  const engines = chosenEngines()
  const keys: Record<EngineName, Hex> = { chromium: anvilKeys[3], firefox: anvilKeys[4], webkit: anvilKeys[5] }
  const peerKey = anvilKeys[2]
  const peerAddress = privateKeyToAddress(peerKey)
  const site = await openSite({ page: SITE_PAGE, funded: engines.map((e) => keys[e]) })
  const columns: Record<string, Record<EngineName, string>> = {}
  const put = (row: string, engine: EngineName, value: string) => {
    columns[row] ??= { chromium: '-', firefox: '-', webkit: '-' }
    columns[row][engine] = value
  }
  try {
    const peer = site.start(site.serveArgs(peerKey, join(site.dir, 'peer')))
    const [, peerApi] = await peer.waitForOutput(/REST API: (\S+)\n/, 60_000)
    await peer.waitForOutput(logged('Ready: '), 60_000)
    for (const engine of engines) {
      const browser = await launchEngine(engine)
      try {
        put('version', engine, browser.version)
        const address = privateKeyToAddress(keys[engine])
        const options = {
          rpc: site.net.anvil.rpcUrl,
          deployment: site.deploymentPath,
          key: keys[engine],
          relay: [site.relayAddress],
          confirmations: 0,
          environment: 'development',
        }
        const tab = await browser.newTab()
        const open = async () => {
          await tab.goto(site.url)
          await tab.waitFor('window.site !== undefined')
        }
        // The first start: a new profile (the service worker registered, the store created, the first sync).
        await open()
        const first = await inTab<Started>(tab, 'start', options)
        put('the first start in a new profile: startNode() until fetch answers (ms)', engine, fmt(first.answered))
        const restarts: Started[] = []
        for (let i = 0; i < RESTARTS; i++) {
          await tab.reload()
          await tab.waitFor('window.site !== undefined')
          restarts.push(await inTab<Started>(tab, 'start', options))
        }
        put(`a restart after a reload, startNode() until fetch answers, median of ${RESTARTS} (ms)`, engine, fmt(medianOf(restarts.map((s) => s.answered))))
        put('the same from the navigation (page load included), median (ms)', engine, fmt(medianOf(restarts.map((s) => s.sinceNavigation))))

        const opened = await inTab<{ status: number; body: unknown }>(tab, 'call', 'PUT', '/api/v1/channels', {
          partner_address: peerAddress,
          token_address: site.net.token,
          total_deposit: String(10 ** 7),
        })
        if (opened.status !== 201) throw new Error(`${engine}: opening the channel answered ${opened.status}: ${JSON.stringify(opened.body)}`)
        for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 50))) {
          const seen = await fetch(`${peerApi}/channels/${site.net.token}/${address}`)
          if (seen.status === 200 && ((await seen.json()) as { state: string }).state === 'opened') break
          if (Date.now() > deadline) throw new Error(`${engine}: the peer has not seen the channel`)
        }
        const check = (paid: Paid, n: number) => {
          if (paid.failures > 0) throw new Error(`${engine}: ${paid.failures} of ${n} payments failed, e.g. ${paid.firstFailures.join('; ')}`)
          return paid
        }
        check(await inTab<Paid>(tab, 'paySequential', site.net.token, peerAddress, WARM_UP, 'sw'), WARM_UP)
        const sequential = check(await inTab<Paid>(tab, 'paySequential', site.net.token, peerAddress, SEQUENTIAL, 'sw'), SEQUENTIAL)
        put(`one payment at a time through the service worker, p50 / p99 (${SEQUENTIAL} payments, ms)`, engine, p50p99(sequential.latencies))
        const concurrent = check(await inTab<Paid>(tab, 'pay', site.net.token, peerAddress, THROUGHPUT, IN_FLIGHT, 'sw'), THROUGHPUT)
        put(
          `${IN_FLIGHT} in flight through the service worker: payments per second (${fmt(THROUGHPUT)} payments)`,
          engine,
          fmt(THROUGHPUT / concurrent.seconds!),
        )
        put(`${IN_FLIGHT} in flight: each payment's latency p50 / p99 (ms)`, engine, p50p99(concurrent.latencies))
        if (browser.pageErrors.length > 0) throw new Error(`${engine}: page errors: ${browser.pageErrors.join('; ')}`)
        await inTab(tab, 'stop')
      } catch (e) {
        put('failed', engine, (e as Error).message.split('\n')[0]!.replaceAll('|', '/'))
      } finally {
        await browser.close()
      }
    }
  } finally {
    await site.close()
  }
  // A failed engine is a row that says so, and the others still run; the bench's exit code tells.
  if (columns.failed) process.exitCode = 1
  const rows: Record<string, string> = { engines: engines.join(' · ') }
  for (const [row, values] of Object.entries(columns)) rows[row] = engines.map((e) => values[e]).join(' · ')
  return rows
}
