/**
 * The embedded path in each engine a dApp's users have (Chromium, Firefox, WebKit: test/support/engines/): the
 * package as built and copied by `sluice init` into a plain site, startNode in a tab, fetch('/api/v1/...') through
 * the service worker, a channel to a headless peer through the relay with payments both ways a page makes them,
 * push events, a second tab, a reload, stop(), and with `p2pAllowPrivate` a direct connection to the peer (it listens
 * on loopback, `--p2p-listen`). One site (one build, chain, relay and peer) for all engines; each engine's node has a
 * key of its own. `SLUICE_ENGINES=firefox` runs one engine.
 */
import { join } from 'node:path'
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { logged } from '../cli/sluiceProcess.ts'
import { chosenEngines, type EngineBrowser, type EngineName, launchEngine, type Tab } from '../support/engines/engine.ts'
import { openSite, type Site } from '../support/engines/site.ts'
import { SITE_PAGE } from '../support/engines/sitePage.ts'

const engines = chosenEngines()
// Each engine's node its own funded key, whichever engines run.
const pageKeys: Record<EngineName, Hex> = { chromium: anvilKeys[3], firefox: anvilKeys[4], webkit: anvilKeys[5] }
const peerKey = anvilKeys[2]
const peerAddress = privateKeyToAddress(peerKey)

let site: Site
let peerApi: string

beforeAll(async () => {
  site = await openSite({ page: SITE_PAGE, funded: engines.map((engine) => pageKeys[engine]) })
  // It listens for direct connections on loopback too: a page dials that address only when given p2pAllowPrivate.
  const peer = site.start([...site.serveArgs(peerKey, join(site.dir, 'peer')), '--p2p-listen', '/ip4/127.0.0.1/tcp/0/ws'])
  ;[, peerApi] = (await peer.waitForOutput(/REST API: (\S+)\n/, 60_000)) as unknown as [string, string]
  await peer.waitForOutput(logged('Ready: '), 60_000)
}, 240_000)

afterAll(async () => {
  await site?.close()
})

type Call = { status: number; body: unknown }
type Paid = { latencies: number[]; failures: number; firstFailures: string[] }

/** `site.<method>(...args)` in the tab (test/support/engines/sitePage.ts). */
const inTab = <T>(tab: Tab, method: string, ...args: unknown[]) => tab.evaluate<T>(`window.site.${method}(...${JSON.stringify(args)})`)

/** True in the page once node.subscribe has heard `n` payment_sent_success events (each its own identifier). */
const sentEvents = (n: number) => `new Set(window.site.events.filter((e) => e.event === 'payment_sent_success').map((e) => e.data.identifier)).size === ${n}`

async function peerSees(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${peerApi}${path}`)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

describe.each(engines)('%s', (engine) => {
  const key = pageKeys[engine]
  const address = privateKeyToAddress(key)
  let browser: EngineBrowser
  let first: Tab
  let second: Tab
  const options = () => ({
    rpc: site.net.anvil.rpcUrl,
    deployment: site.deploymentPath,
    key,
    relay: [site.relayAddress],
    confirmations: 0,
    environment: 'development',
  })
  const call = async (tab: Tab, method: string, path: string, body?: unknown) => inTab<Call>(tab, 'call', method, path, body)

  beforeAll(async () => {
    browser = await launchEngine(engine)
    console.log(`${engine} ${browser.version}`)
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    // Nothing the page did threw where nobody caught it.
    expect(browser?.pageErrors ?? []).toEqual([])
  })

  test('startNode resolves, and fetch("/api/v1/...") reaches the node through the service worker', async () => {
    first = await browser.newTab()
    await first.goto(site.url)
    await first.waitFor('window.site !== undefined')
    const started = await inTab<{ address: string; startNode: number; answered: number }>(first, 'start', options())
    console.log(`${engine}: startNode ${started.startNode.toFixed(0)} ms, first answer through the service worker ${started.answered.toFixed(0)} ms`)
    expect(started.address).toBe(address)
    const about = await inTab<{ leader: boolean; controlled: boolean }>(first, 'about')
    expect(about).toMatchObject({ leader: true, controlled: true })
    expect(await call(first, 'GET', '/api/v1/version')).toMatchObject({ status: 200 })
    // The browser's answer on persistent storage, which the start never waited for: Chromium answers at once;
    // Firefox asks the person (a prompt nobody answers here); WebKit has no navigator.storage.
    const persisted = (await inTab<{ storagePersisted: unknown }>(first, 'about')).storagePersisted
    if (engine === 'chromium') expect(typeof persisted).toBe('boolean')
    else expect(persisted).toBe('unanswered')
    // Asked again as on a click, with a bound: Firefox's prompt still unanswered, what persisted() says then.
    const asked = first.evaluate('window.node.persistStorage({ timeoutMs: 500 })')
    if (engine === 'webkit') await expect(asked).rejects.toMatchObject({ code: 'BROWSER_UNSUPPORTED', message: expect.stringContaining('storageManager') })
    else expect(typeof (await asked)).toBe('boolean')
    // Bad input is answered by the node with its 4xx JSON, through the service worker as from any host.
    expect(await call(first, 'PUT', '/api/v1/channels', { partner_address: 'nope' })).toMatchObject({ status: 400, body: { errors: expect.any(String) } })
  }, 90_000)

  test('a channel to a headless peer through the relay; payments through the service worker and on the proxy arrive', async () => {
    const token = site.net.token
    const opened = await call(first, 'PUT', '/api/v1/channels', { partner_address: peerAddress, token_address: token, total_deposit: '1000000' })
    expect(opened).toMatchObject({ status: 201, body: { state: 'opened', partner_address: peerAddress } })
    await expect.poll(async () => (await peerSees(`/channels/${token}/${address}`)).body.state, { timeout: 30_000 }).toBe('opened')

    await inTab(first, 'listen')
    const viaFetch = await inTab<Paid>(first, 'paySequential', token, peerAddress, 20, 'sw')
    const viaProxy = await inTab<Paid>(first, 'paySequential', token, peerAddress, 5, 'proxy')
    expect([viaFetch.failures, viaProxy.failures, viaFetch.firstFailures]).toEqual([0, 0, []])
    const sorted = [...viaFetch.latencies].sort((a, b) => a - b)
    console.log(`${engine}: 20 payments through the service worker, p50 ${sorted[10]!.toFixed(0)} ms, max ${sorted[19]!.toFixed(0)} ms`)
    // The peer holds what was paid, as it says over its own API: 25 payments of 1.
    await expect.poll(async () => (await peerSees(`/channels/${token}/${address}`)).body.balance, { timeout: 30_000 }).toBe('25')
    // The page's node says the same, in its channel and its payment history.
    const channel = await call(first, 'GET', `/api/v1/channels/${token}/${peerAddress}`)
    expect(channel.body).toMatchObject({ balance: String(1_000_000 - 25) })
    // The push events: one payment_sent_success per payment, over node.subscribe.
    await first.waitFor(sentEvents(25), 20_000)
    // All through the relay: the peer announces a loopback address, which a page does not dial unless told to.
    expect(await call(first, 'GET', '/api/v1/_debug/transport')).toMatchObject({ status: 200, body: { transport: { direct_peers: 0 } } })
  }, 120_000)

  test('a second tab uses the first tab’s node: its startNode follows, its fetch and payments reach the same node', async () => {
    second = await browser.newTab()
    await second.goto(site.url)
    await second.waitFor('window.site !== undefined')
    const started = await inTab<{ address: string }>(second, 'start', options())
    expect(started.address).toBe(address)
    expect(await inTab(second, 'about')).toMatchObject({ leader: false, controlled: true })
    const paid = await inTab<Paid>(second, 'paySequential', site.net.token, peerAddress, 3, 'sw')
    expect(paid.failures).toBe(0)
    await expect.poll(async () => (await peerSees(`/channels/${site.net.token}/${address}`)).body.balance, { timeout: 30_000 }).toBe('28')
    // The first tab's subscription hears the second tab's payments too: one node, one event stream.
    await first.waitFor(sentEvents(28), 20_000)
  }, 90_000)

  test('a reload of the leading tab: the other tab takes the node over from IndexedDB, nothing is lost', async () => {
    await first.reload()
    await first.waitFor('window.site !== undefined')
    // The second tab was waiting on the leader's lock: it runs the node now.
    await second.waitFor('window.site.about().leader === true', 30_000)
    const started = await inTab<{ address: string }>(first, 'start', options())
    expect(started.address).toBe(address)
    expect(await inTab(first, 'about')).toMatchObject({ leader: false, controlled: true })
    const channel = await call(first, 'GET', `/api/v1/channels/${site.net.token}/${peerAddress}`)
    expect(channel).toMatchObject({ status: 200, body: { state: 'opened', balance: String(1_000_000 - 28) } })
    const payments = await call(first, 'GET', `/api/v1/payments/${site.net.token}/${peerAddress}?limit=100`)
    expect((payments.body as { event: string }[]).filter((e) => e.event === 'EventPaymentSentSuccess')).toHaveLength(28)
    const paid = await inTab<Paid>(first, 'paySequential', site.net.token, peerAddress, 2, 'sw')
    expect(paid.failures).toBe(0)
  }, 90_000)

  test('stop(): the leading tab stops its node and the other takes over; once both stop, fetch says no node runs', async () => {
    await inTab(second, 'stop')
    await first.waitFor('window.site.about().leader === true', 30_000)
    expect(await call(first, 'GET', '/api/v1/address')).toEqual({ status: 200, body: { our_address: address } })
    await inTab(first, 'stop')
    const after = await call(first, 'GET', '/api/v1/address')
    expect(after).toMatchObject({ status: 503, body: { errors: expect.stringContaining('no Sluice node runs') } })
    await second.close()
    await first.close()
  }, 90_000)

  test("p2pAllowPrivate: the node dials the peer's direct address on loopback and pays over it, not through the relay", async () => {
    const tab = await browser.newTab()
    await tab.goto(site.url)
    await tab.waitFor('window.site !== undefined')
    const refused = await tab.evaluate<{ code: string; message: string }>(
      `import('sluice/browser').then(({ startNode }) => startNode({ ...${JSON.stringify(options())}, p2pAllowPrivate: 'yes' }).then(() => ({}), (e) => ({ code: e.code, message: e.message })))`,
    )
    expect(refused).toEqual({ code: 'INVALID_OPTIONS', message: 'p2pAllowPrivate must be true or false, not "yes"' })
    await inTab(tab, 'start', { ...options(), p2pAllowPrivate: true })
    const balance = Number((await peerSees(`/channels/${site.net.token}/${address}`)).body.balance)
    const paid = await inTab<Paid>(tab, 'paySequential', site.net.token, peerAddress, 3, 'sw')
    expect(paid.failures).toBe(0)
    await expect.poll(async () => (await peerSees(`/channels/${site.net.token}/${address}`)).body.balance, { timeout: 30_000 }).toBe(String(balance + 3))
    // Its messages went over a direct WebSockets connection, which both ends count.
    await expect
      .poll(async () => (await call(tab, 'GET', '/api/v1/_debug/transport')).body, { timeout: 20_000 })
      .toMatchObject({ transport: { direct_peers: 1 } })
    expect((await peerSees('/_debug/transport')).body).toMatchObject({ transport: { direct_peers: 1 } })
    await inTab(tab, 'stop')
    await tab.close()
  }, 90_000)

  test('no service workers (Firefox: as in its private windows): startNode fails at once with its code; with serviceWorker: false the proxy works', async () => {
    // Firefox turns them off for real with its own preference; the other engines have no such switch, so the page
    // hides navigator.serviceWorker before startNode looks.
    const without = engine === 'firefox' ? await launchEngine('firefox', { firefoxPrefs: { 'dom.serviceWorkers.enabled': false } }) : browser
    try {
      const tab = await without.newTab()
      await tab.goto(`${site.url}?no-service-worker`)
      await tab.waitFor('window.site !== undefined')
      if (engine !== 'firefox') await tab.evaluate(`Object.defineProperty(Navigator.prototype, 'serviceWorker', { get: () => undefined }) && null`)
      expect(await tab.evaluate('navigator.serviceWorker ?? null')).toBe(null)
      const start = (extra: string) =>
        `import('sluice/browser').then(async ({ startNode }) => {
          const t0 = performance.now()
          try {
            window.node = await startNode({ ...${JSON.stringify(options())}, ${extra} })
            return { ms: performance.now() - t0, started: true }
          } catch (e) {
            return { ms: performance.now() - t0, code: e.code, message: e.message }
          }
        })`
      const refused = await tab.evaluate<{ ms: number; code: string; message: string }>(start(''))
      expect(refused).toMatchObject({ code: 'SERVICE_WORKER', message: expect.stringContaining('serviceWorker: false') })
      expect(refused.ms).toBeLessThan(1_000)
      const started = await tab.evaluate<{ started: boolean }>(start('serviceWorker: false'))
      expect(started).toMatchObject({ started: true })
      // The proxy's methods answer: the node, its channel to the peer and what was paid, over the request channel.
      // In Firefox that is a new profile, an empty store with the same key (as after Safari's 7 days): the channel,
      // found on chain, waits for the peer's sync and then knows the 33 payments, rather than paying on from nonce 1.
      expect(await tab.evaluate('window.node.address()')).toEqual({ our_address: address })
      await expect
        .poll(async () => tab.evaluate<{ partner_address: string; balance: string }[]>('window.node.channels()'), { timeout: 30_000 })
        .toMatchObject([{ partner_address: peerAddress, balance: String(1_000_000 - 33) }])
      const paid = await tab.evaluate<{ identifier: string }>(`window.node.pay('${site.net.token}', '${peerAddress}', { amount: '1' })`)
      expect(paid).toMatchObject({ identifier: expect.any(String) })
      await expect.poll(async () => (await peerSees(`/channels/${site.net.token}/${address}`)).body.balance, { timeout: 30_000 }).toBe('34')
      await tab.evaluate('window.node.stop()')
      await tab.close()
    } finally {
      if (without !== browser) await without.close()
    }
  }, 90_000)
})
