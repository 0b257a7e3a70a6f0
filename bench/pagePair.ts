// Two pages, two nodes, each in its page's worker (docs/decisions/0065): one payment at a time from one to the other,
// over their WebRTC connection (which each page holds for its worker), then through the relay once one page turned
// WebRTC off. Two Chromium browsers (two profiles: two nodes of one site), the package as built, `sluice relay`,
// anvil: the site of test/support/engines/site.ts. ICE on this machine's own addresses, no STUN.
import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { anvilKeys } from '../src/devnet/anvil.ts'
import { launchEngine, type Tab } from '../test/support/engines/engine.ts'
import { openSite } from '../test/support/engines/site.ts'
import { SITE_PAGE } from '../test/support/engines/sitePage.ts'
import { fmt, percentile } from './measure.ts'

const WARM_UP = 20
const SEQUENTIAL = 200

type Paid = { latencies: number[]; failures: number; firstFailures: string[] }
type Connection = { state: string; bytesSent: number; bytesReceived: number }

const inTab = <T>(tab: Tab, method: string, ...args: unknown[]) => tab.evaluate<T>(`window.site.${method}(...${JSON.stringify(args)})`, 600_000)
const p50p99 = (values: number[]) => `${fmt(percentile(values, 50))} / ${fmt(percentile(values, 99))}`

export async function benchPagePair(): Promise<Record<string, string>> {
  const keys: [Hex, Hex] = [anvilKeys[3], anvilKeys[4]]
  const [, B] = keys.map((key) => privateKeyToAddress(key))
  const site = await openSite({ page: SITE_PAGE, funded: keys })
  const browsers = await Promise.all(keys.map(() => launchEngine('chromium', { webrtcHostCandidates: true })))
  try {
    const [a, b] = await Promise.all(browsers.map((browser) => browser.newTab()))
    const tabs = [a!, b!]
    await Promise.all(tabs.map((tab) => tab.goto(site.url)))
    await Promise.all(tabs.map((tab) => tab.waitFor('window.site !== undefined')))
    const options = (key: Hex) => ({
      rpc: site.net.anvil.rpcUrl,
      deployment: site.deploymentPath,
      key,
      relay: [site.relayAddress],
      confirmations: 0,
      environment: 'development',
    })
    await Promise.all(tabs.map((tab, i) => inTab(tab, 'start', options(keys[i]!))))
    const token = site.net.token
    const opened = await inTab<{ status: number; body: unknown }>(a!, 'call', 'PUT', '/api/v1/channels', {
      partner_address: B,
      token_address: token,
      total_deposit: String(10 ** 7),
    })
    if (opened.status !== 201) throw new Error(`opening the channel answered ${opened.status}: ${JSON.stringify(opened.body)}`)
    const pay = async (n: number) => {
      for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 100))) {
        const paid = await inTab<Paid>(a!, 'paySequential', token, B, n, 'proxy')
        if (paid.failures === 0) return paid.latencies
        // The first ones may come before B has seen the channel on chain: tried again.
        if (Date.now() > deadline) throw new Error(`${paid.failures} of ${n} payments failed, e.g. ${paid.firstFailures.join('; ')}`)
      }
    }
    const webrtc = () => Promise.all(tabs.map((tab) => tab.evaluate<Connection[]>('window.node.webrtc.connections()')))

    await pay(WARM_UP)
    for (const deadline = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 100))) {
      const connections = await webrtc()
      if (connections.every((c) => c.length === 1 && c[0]!.state === 'connected')) break
      if (Date.now() > deadline) throw new Error(`no WebRTC connection between the pages: ${JSON.stringify(connections)}`)
    }
    await pay(WARM_UP)
    const bytes = async () => (await webrtc())[0]!.reduce((sum, c) => sum + c.bytesSent + c.bytesReceived, 0)
    const before = await bytes()
    const overWebRtc = await pay(SEQUENTIAL)
    const perPayment = ((await bytes()) - before) / SEQUENTIAL
    // Then without: through the relay, with the same nodes and the same channel.
    await a!.evaluate('window.node.webrtc.close()')
    await pay(WARM_UP)
    const throughRelay = await pay(SEQUENTIAL)
    const errors = browsers.flatMap((browser) => browser.pageErrors)
    if (errors.length > 0) throw new Error(`page errors: ${errors.join('; ')}`)
    return {
      browser: `Chromium ${browsers[0]!.version}`,
      [`one payment at a time from one page to the other over WebRTC, p50 / p99 (${SEQUENTIAL} payments, on the proxy, ms)`]: p50p99(overWebRtc),
      'the same through the relay (WebRTC turned off in one page), p50 / p99 (ms)': p50p99(throughRelay),
      'bytes the WebRTC connection carried per payment, both ways (its messages and acknowledgements)': fmt(perPayment),
    }
  } finally {
    await Promise.all(browsers.map((browser) => browser.close()))
    await site.close()
  }
}
