import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, test } from 'vitest'
import type { DemoConfig } from '../../demo/src/config.ts'
import { call } from '../cli/devnetProcess.ts'
import { descendants, isAlive, startSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { eventually } from '../integration/support/eventually.ts'
import { chosenEngines } from '../support/engines/engine.ts'
import { drivePage } from './drivePage.ts'

/**
 * `npm run demo` as a person runs it (`node --import tsx scripts/demo.ts`: one process, see startDemo): it builds the package and the page, starts the
 * network, serves the page with /demo.json; a person uses the page end to end in each engine a dApp's users have
 * (drivePage.ts; Chromium, Firefox and WebKit, or those SLUICE_ENGINES names), all at once against the one demo,
 * each browser with a node of its own; Ctrl-C leaves no process behind. It builds into the checkout's packages/sluice/dist/ and packages/node/dist/,
 * demo/public/ and demo/dist/, as `npm run demo` does: run the port-in-use case first, which must fail before building.
 */

const repo = fileURLToPath(new URL('../..', import.meta.url))
const started: SluiceProcess[] = []
/**
 * As package.json's `demo` script runs it. Not through the tsx command: it relays a signal to the script's process
 * and, if that does not say within 30 ms that it has a handler (a busy machine: CI), kills it with SIGKILL and exits
 * 130, leaving anvil and the peers behind.
 */
function startDemo(args: string[]): SluiceProcess {
  const demo = startSluice(['scripts/demo.ts', ...args], repo, ['--import', 'tsx'])
  started.push(demo)
  return demo
}

/**
 * Every process under `pid`, sampled every 50 ms until `stop()`: once a parent exits its children are reparented, so
 * the tree must be known while it stands. Checked at the end: none may outlive the demo. Each sample reads /proc once
 * (descendants): read once per process of the tree, a sample took 14 ms on an idle machine and 100 to 250 ms under
 * two CI runs, so the watch kept this process, which also drives the browsers, busy for the whole journey.
 */
function watchTree(pid: number) {
  const seen = new Map<number, string>()
  const sample = () => {
    for (const p of descendants(pid)) seen.set(p.pid, p.name)
  }
  sample()
  const timer = setInterval(sample, 50)
  return {
    seen,
    stop: () => clearInterval(timer),
    alive: () => [...seen].filter(([p]) => isAlive(p)).map(([p, name]) => `${name} (${p})`),
  }
}

afterAll(async () => {
  // A failed test may leave a demo running: stop it as Ctrl-C would.
  for (const demo of started) if (demo.child.exitCode === null && demo.child.signalCode === null) demo.child.kill('SIGINT')
  await Promise.all(started.map((d) => d.exited))
})

/** An HTTP request with the path and headers given as they are (fetch would not send another Host); its status and JSON (or text). */
function send(
  target: URL | { hostname: string; port: string; path: string },
  { method = 'GET', headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string },
) {
  return new Promise<{ status: number; body: unknown }>((done, fail) => {
    const where = target instanceof URL ? { hostname: target.hostname, port: target.port, path: `${target.pathname}${target.search}` } : target
    const req = request({ ...where, method, headers }, (res) => {
      let text = ''
      res.on('data', (c: Buffer) => (text += c))
      res.on('end', () => done({ status: res.statusCode!, body: res.headers['content-type']?.startsWith('application/json') ? JSON.parse(text) : text }))
    })
    req.on('error', fail)
    req.end(body)
  })
}

async function takenPort(): Promise<{ server: Server; port: number }> {
  const server = createServer()
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return { server, port: (server.address() as { port: number }).port }
}

describe('npm run demo', () => {
  test('a port in use: one line on stderr, exit code 2, nothing built or left running', async () => {
    const { server, port } = await takenPort()
    try {
      const demo = startDemo(['--port', String(port)])
      const tree = watchTree(demo.child.pid!)
      const { code } = await demo.exited
      tree.stop()
      expect(code).toBe(2)
      expect(demo.stderr()).toBe(`sluice demo: port ${port} is in use; choose another with --port\n`)
      expect(demo.stdout()).toBe('')
      // One process now (node --import tsx): whatever it started (tsx's esbuild service, if the watch saw it) is gone.
      await eventually(() => expect(tree.alive()).toEqual([]), 5_000)
    } finally {
      server.close()
    }
  })

  // One demo for the rest of the file (one build): it is started, the page is driven, then it is stopped.
  let demo: SluiceProcess
  let tree: ReturnType<typeof watchTree>
  let url: string
  let config: DemoConfig

  test('builds, starts the network and serves the page with /demo.json', async () => {
    const began = performance.now()
    demo = startDemo(['--port', '0'])
    tree = watchTree(demo.child.pid!)
    await demo.waitForOutput(/Press Ctrl-C to stop\.\n$/, 150_000)
    console.log(`npm run demo: ready in ${((performance.now() - began) / 1000).toFixed(1)} s`)
    url = /^Demo: (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(demo.stdout())![1]!

    // The page, with its title.
    const title = /<title>(.*)<\/title>/.exec(readFileSync(join(repo, 'demo/index.html'), 'utf8'))![1]!
    const page = await fetch(url)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    expect(await page.text()).toContain(`<title>${title}</title>`)

    // What the page is told: the chain, the relay, the two peers (running), the tokens, the backup server (running).
    const answer = await fetch(new URL('/demo.json', url))
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/)
    config = (await answer.json()) as DemoConfig
    expect(Object.keys(config).sort()).toEqual(['backup', 'blockTime', 'chainId', 'deployment', 'monitor', 'pathfinding', 'peers', 'relay', 'rpc', 'tokens'])
    expect(config.blockTime).toBe(1)
    expect(config.deployment).toBe(`/deployments/${config.chainId}.json`)
    expect(config.relay).toHaveLength(1)
    expect(config.relay[0]).toMatch(/^\/ip4\/127\.0\.0\.1\/tcp\/\d+\/ws\/p2p\/\w+$/)
    expect(Object.keys(config.tokens)).toEqual(['TTT', 'TT2'])
    expect(config.peers.map((p) => p.name)).toEqual(['Peer 1', 'Peer 2'])
    for (const peer of config.peers) expect(await call('GET', `${peer.api}/address`)).toEqual({ status: 200, body: { our_address: peer.address } })
    expect(demo.stdout()).toContain(`Backup server: ${config.backup}`)
    expect(await call('GET', `${config.backup}/status`)).toMatchObject({ status: 200, body: { service: 'sluice-backup', copies: 0 } })
    // The monitoring service, registered and answering.
    expect(await call('GET', `${config.monitor.api}/status`)).toMatchObject({
      status: 200,
      body: { address: config.monitor.address, registration: { registered: true } },
    })
    expect(demo.stdout()).toContain(`Monitoring service: ${config.monitor.address}, REST API ${config.monitor.api}`)
    // The pathfinding service the page's node asks for routes (docs/decisions/0073): registered, told of the peers' channel.
    expect(await call('GET', `${config.pathfinding!.url}/api/v1/status`)).toMatchObject({
      status: 200,
      body: { address: config.pathfinding!.address, registration: { registered: true }, network: { channels: 1 } },
    })
    expect(demo.stdout()).toContain(`Pathfinding service: ${config.pathfinding!.address}, ${config.pathfinding!.url}`)
    const chain = await call('POST', config.rpc, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })
    expect(Number(chain.body.result)).toBe(config.chainId)

    // The deployment file it names, on this origin.
    const deployment = await fetch(new URL(config.deployment, url))
    expect(deployment.status).toBe(200)
    expect(deployment.headers.get('content-type')).toMatch(/^application\/json/)
    expect(((await deployment.json()) as { chainId: number }).chainId).toBe(config.chainId)

    // The service worker `sluice init` copied, as JavaScript.
    const sw = await fetch(new URL('/sluice-sw.js', url))
    expect(sw.status).toBe(200)
    expect(sw.headers.get('content-type')).toMatch(/^text\/javascript/)
    expect((await sw.text()).length).toBeGreaterThan(0)
  }, 180_000)

  test("the page's door to the peers' and the monitoring service's APIs: its own origin only, the page's routes only", async ({ skip }) => {
    if (!config) skip('the demo did not start')
    const [peer1, peer2] = config.peers as [DemoConfig['peers'][number], DemoConfig['peers'][number]]
    const own = new URL(url)
    // The path as written, unnormalised (`..` included): the server reads it.
    const door = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
      send({ hostname: own.hostname, port: own.port, path }, init)
    expect(config.peers.map((p) => p.via)).toEqual(['/peers/1/api/v1', '/peers/2/api/v1'])
    expect(config.monitor.via).toBe('/monitor/api/v1')

    // The page's own requests pass (a fetch of its origin carries its Origin and Sec-Fetch-Site: same-origin), as a
    // program's do (neither); the peer's API itself refuses the page's origin.
    const fromPage = { origin: own.origin, 'sec-fetch-site': 'same-origin' }
    expect(await door(`${peer1.via}/address`, { headers: fromPage })).toEqual({ status: 200, body: { our_address: peer1.address } })
    expect(await door(`${peer2.via}/address`)).toEqual({ status: 200, body: { our_address: peer2.address } })
    expect(await door(`${config.monitor.via}/status`, { headers: fromPage })).toMatchObject({ status: 200, body: { address: config.monitor.address } })
    expect(await send(new URL(`${peer1.api}/address`), { headers: fromPage })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN_ORIGIN' } })

    // Another site's page, a DNS-rebinding page (its own Host) and another site's navigation are refused before
    // anything is passed on: the payment below is never made.
    const payments = async () => ((await call('GET', `${peer1.api}/payments`)).body as unknown[]).length
    const before = await payments()
    const pay = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amount: '1' }) }
    const payPath = `${peer1.via}/payments/${config.tokens.TTT}/${peer2.address}`
    expect(await door(payPath, { ...pay, headers: { ...pay.headers, origin: 'http://attacker.example' } })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN_ORIGIN' },
    })
    expect(await door(payPath, { ...pay, headers: { ...pay.headers, host: `attacker.example:${own.port}` } })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN_HOST' },
    })
    expect(await door(payPath, { ...pay, headers: { ...pay.headers, 'sec-fetch-site': 'cross-site' } })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN_ORIGIN' },
    })
    // A body that is not JSON goes on with its type, and the peer's API refuses it as it refuses any (decision 0025).
    expect(await door(payPath, { ...pay, headers: { 'content-type': 'text/plain' } })).toMatchObject({ status: 415, body: { code: 'UNSUPPORTED_MEDIA_TYPE' } })
    expect(await payments()).toBe(before)

    // Only the routes the page uses: not a peer's state export, not a channel opened by the peer, no peer 3.
    expect(await door(`${peer1.via}/_state/export`)).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } })
    expect(await door(`${peer1.via}/channels`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{}' })).toMatchObject({
      status: 405,
      body: { code: 'METHOD_NOT_ALLOWED' },
    })
    expect(await door(`${peer1.via}/channels/../_state/export`)).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } })
    // Read as /peers/peers/1/api/v1/_state/export: not the door's, and no file.
    expect(await door(`${peer1.via}/%2e%2e/%2e%2e/../peers/1/api/v1/_state/export`)).toEqual({ status: 404, body: 'Not found\n' })
    expect(await door('/peers/3/api/v1/address')).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } })
    expect(await door(`${config.monitor.via}/monitor_calls?limit=1`, { headers: fromPage })).toEqual({ status: 200, body: [] })
  })

  // The engines' journeys at once: each browser is a profile with a node of its own, and the demo's peers, faucet
  // and monitoring service serve them all.
  test.concurrent.for(chosenEngines())(
    '%s: a person drives the page: start, fund, open, deposit, pay direct and mediated, reload, withdraw, be paid; close the tab while a peer closes, watch the monitoring service act, reopen and find the money',
    { timeout: 300_000 },
    async (engine, { skip, expect }) => {
      if (!config) skip('the demo did not start')
      await drivePage(engine, url, config, (line) => console.log(line))
      // The terminal of `npm run demo` shows the service's transaction too, for a person whose tab is closed.
      expect(demo.stderr()).toMatch(/^devnet: \d\d:\d\d:\d\d\.\d{3} INFO +monitor: sent MonitoringService\.monitor\(/m)
    },
  )

  test('Ctrl-C stops everything it started and exits 0', async ({ skip }) => {
    if (!demo) skip('the demo did not start')
    // No process of the tree may be left (anvil, the devnet, its peers and relay, tsx's own).
    expect([...tree.seen.values()]).toContain('anvil')
    demo.child.kill('SIGINT')
    const { code } = await demo.exited
    tree.stop()
    expect(code).toBe(0)
    expect(demo.stderr()).toMatch(/SIGINT: stopping\n$/)
    await eventually(() => expect(tree.alive()).toEqual([]), 5_000)
  }, 60_000)
})
