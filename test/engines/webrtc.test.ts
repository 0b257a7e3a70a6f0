/**
 * Two pages, two nodes, one WebRTC connection (issue 29, docs/decisions/0065): each node runs in its page's worker,
 * which has no RTCPeerConnection, so each page holds the connection for its worker through the bridge. Two
 * browsers of the engine (two profiles: two nodes of the same site), the package as built, a relay of the test's
 * own. A channel between them; payments both ways, one at a time; proofs that they went over WebRTC (the pages'
 * connections carried them, and they go on with the relay stopped), and that when WebRTC goes (one page turns it
 * off, the other's tab closes and a second tab takes the node over) payments go on through the relay, none lost.
 * ICE on this machine's own addresses, no STUN (the closed network has none; `webrtcHostCandidates`).
 */
import type { Hex } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { relayListening, stopSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { chosenEngines, type EngineBrowser, type EngineName, launchEngine, type Tab } from '../support/engines/engine.ts'
import { openSite, type Site } from '../support/engines/site.ts'
import { SITE_PAGE } from '../support/engines/sitePage.ts'
import { freePort } from '../support/testCa.ts'

// WebKitGTK's MiniBrowser: see the engines' notes in docs/transport.md (WebRTC). Chromium and Firefox.
const engines = chosenEngines().filter((e) => e !== 'webkit') as Exclude<EngineName, 'webkit'>[]
const keys: Record<Exclude<EngineName, 'webkit'>, [Hex, Hex]> = { chromium: [anvilKeys[3], anvilKeys[4]], firefox: [anvilKeys[5], anvilKeys[6]] }

let site: Site
let relay: SluiceProcess
let relayAddress: string
let relayPort: number
const relayKey = generatePrivateKey()

/** The test's relay, on the same port and key each time: restarted, it is at the same address. */
async function startRelay(): Promise<void> {
  relay = site.start(['relay', '--listen', `/ip4/127.0.0.1/tcp/${relayPort}/ws`, '--key', relayKey])
  await relay.waitForOutput(/Press Ctrl-C to stop/)
  relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
}

beforeAll(async () => {
  site = await openSite({ page: SITE_PAGE, funded: engines.flatMap((engine) => keys[engine]) })
  relayPort = await freePort()
  await startRelay()
}, 240_000)

afterAll(async () => {
  await site?.close()
})

type Paid = { latencies: number[]; failures: number; firstFailures: string[] }
type Connection = { state: string; channels: number; bytesSent: number; bytesReceived: number }

const inTab = <T>(tab: Tab, method: string, ...args: unknown[]) => tab.evaluate<T>(`window.site.${method}(...${JSON.stringify(args)})`)
const webrtc = (tab: Tab) => tab.evaluate<Connection[]>('window.node.webrtc.connections()')
const carried = (connections: Connection[]) => connections.reduce((sum, c) => sum + c.bytesSent + c.bytesReceived, 0)

describe.each(engines)('%s', (engine) => {
  const [keyA, keyB] = keys[engine]
  const [A, B] = [privateKeyToAddress(keyA), privateKeyToAddress(keyB)]
  let browserA: EngineBrowser
  let browserB: EngineBrowser
  let a: Tab
  let b: Tab
  const token = () => site.net.token
  const options = (key: Hex) => ({
    rpc: site.net.anvil.rpcUrl,
    deployment: site.deploymentPath,
    key,
    relay: [relayAddress],
    confirmations: 0,
    environment: 'development',
  })
  /** n payments of 1, one at a time, each answered with success. */
  const pay = async (from: Tab, to: string, n: number) => {
    const paid = await inTab<Paid>(from, 'paySequential', token(), to, n, 'proxy')
    expect([paid.failures, paid.firstFailures]).toEqual([0, []])
    return paid.latencies
  }
  const balance = async (tab: Tab, partner: string) => (await tab.evaluate<{ balance: string }>(`window.node.channel('${token()}', '${partner}')`)).balance

  beforeAll(async () => {
    ;[browserA, browserB] = await Promise.all([launchEngine(engine, { webrtcHostCandidates: true }), launchEngine(engine, { webrtcHostCandidates: true })])
    console.log(`${engine} ${browserA.version}`)
    ;[a, b] = await Promise.all([browserA.newTab(), browserB.newTab()])
    await Promise.all([a.goto(site.url), b.goto(site.url)])
    await Promise.all([a.waitFor('window.site !== undefined'), b.waitFor('window.site !== undefined')])
    await Promise.all([inTab(a, 'start', options(keyA)), inTab(b, 'start', options(keyB))])
  }, 120_000)
  afterAll(async () => {
    await Promise.all([browserA?.close(), browserB?.close()])
    // Nothing the pages did threw where nobody caught it; Firefox also reports each WebSocket refused while the relay
    // was stopped (the node dials it again until it is back).
    const errors = [...(browserA?.pageErrors ?? []), ...(browserB?.pageErrors ?? [])]
    expect(errors.filter((e) => !e.endsWith(`can’t establish a connection to the server at ws://127.0.0.1:${relayPort}/.`))).toEqual([])
  })

  test('a channel between the pages; once their WebRTC connection is up, payments both ways go over it, also with the relay stopped', async () => {
    const opened = await inTab<{ status: number }>(a, 'call', 'PUT', '/api/v1/channels', { partner_address: B, token_address: token(), total_deposit: '1000' })
    expect(opened.status).toBe(201)
    await expect
      .poll(async () => (await inTab<{ status: number; body: { state?: string } }>(b, 'call', 'GET', `/api/v1/channels/${token()}/${A}`)).body.state, {
        timeout: 30_000,
      })
      .toBe('opened')

    // The first payment goes at once, through the relay; the connection comes up beside it.
    await pay(a, B, 1)
    await expect
      .poll(async () => (await Promise.all([webrtc(a), webrtc(b)])).map((c) => c.map((x) => x.state)), { timeout: 30_000 })
      .toEqual([['connected'], ['connected']])
    await pay(a, B, 3)
    await pay(b, A, 2)

    // No relay: only the direct connection is left (no new one can be made without the relay's signalling), and
    // payments go on both ways, over it.
    await stopSluice(relay)
    const before = carried(await webrtc(a))
    await pay(a, B, 5)
    await pay(b, A, 3)
    await expect.poll(async () => balance(a, B), { timeout: 10_000 }).toBe(String(1000 - 9 + 5))
    await expect.poll(async () => balance(b, A), { timeout: 10_000 }).toBe(String(9 - 5))
    expect((await webrtc(a)).map((c) => c.state)).toEqual(['connected'])
    // Each payment is five messages and their acknowledgements: kilobytes on the connection (3.2 kB in the bench).
    expect(carried(await webrtc(a)) - before).toBeGreaterThan(8 * 1_000)
    await startRelay()
  }, 120_000)

  test('the tab that holds the node and its connection closes: a second tab takes the node over, payments to it arrive, none lost, and a new connection comes up', async () => {
    const second = await browserB.newTab()
    await second.goto(site.url)
    await second.waitFor('window.site !== undefined')
    await inTab(second, 'start', options(keyB))
    expect(await inTab(second, 'about')).toMatchObject({ leader: false })
    await b.close()
    await second.waitFor('window.site.about().leader === true', 30_000)
    b = second
    // The closed tab's end went with it: A's connection closes, and A's payments find the node in the new tab.
    await pay(a, B, 2)
    await expect.poll(async () => balance(b, A), { timeout: 30_000 }).toBe(String(9 - 5 + 2))
    await expect
      .poll(async () => (await Promise.all([webrtc(a), webrtc(b)])).map((c) => c.map((x) => x.state)), { timeout: 30_000 })
      .toEqual([['connected'], ['connected']])
    await pay(a, B, 1)
    await pay(b, A, 1)
    await expect.poll(async () => balance(a, B), { timeout: 10_000 }).toBe(String(1000 - 12 + 6))
  }, 120_000)

  test('a page turns WebRTC off: its connection closes, and payments both ways go on through the relay', async () => {
    await a.evaluate('window.node.webrtc.close()')
    expect(await webrtc(a)).toEqual([])
    const t0 = performance.now()
    const first = await pay(a, B, 1)
    const firstBack = await pay(b, A, 1)
    console.log(`${engine}: after WebRTC closed, the first payment each way took ${first[0]!.toFixed(0)} ms and ${firstBack[0]!.toFixed(0)} ms`)
    await pay(a, B, 2)
    await pay(b, A, 1)
    console.log(`${engine}: 5 payments through the relay after WebRTC closed in ${(performance.now() - t0).toFixed(0)} ms`)
    // At once, not once ICE's consent runs out on the other end (which took 12 s before the page watched the
    // connection's DTLS and SCTP transports: webrtcBridge.ts).
    expect(Math.max(first[0]!, firstBack[0]!)).toBeLessThan(5_000)
    // Once B's last Unlock has reached A.
    await expect.poll(async () => balance(a, B), { timeout: 10_000 }).toBe(String(1000 - 15 + 8))
    // Nothing new: the page makes no connection any more, the other one gave up its own.
    expect(await webrtc(a)).toEqual([])
    await expect.poll(async () => (await webrtc(b)).filter((c) => c.state === 'connected'), { timeout: 30_000 }).toEqual([])
  }, 120_000)
})
