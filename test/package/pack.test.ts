import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { getAddress, parseEther, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { CustomToken, bytecode } from '../../src/contracts/index.ts'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { anvilClient } from '../support/clients.ts'
import { relayListening, startSluice, type SluiceProcess } from '../cli/sluiceProcess.ts'
import { call } from '../cli/devnetProcess.ts'
import { eventually } from '../integration/support/eventually.ts'
import {
  CONSUMER_TSCONFIG,
  CONSUMER_USES,
  CONSUMER_WRONG,
  CONSUMER_WRONG_LINES,
  declarationFiles,
  packagesImported,
  REACT_WRONG,
  REACT_WRONG_LINES,
} from './support/consumer.ts'
import { diskBytes, installedPackages } from './support/installed.ts'
import { type Stage, stagePackages } from './support/stage.ts'

/**
 * The packages as a dApp and a node's host get them: a fresh build of both packed by `npm pack`; the sluice tarball
 * alone installed into a new Vite app (one package, a few MB), `npx sluice init public/`, `vite build` and
 * `vite preview`; both tarballs installed into another folder, where `sluice serve` and `sluice relay` of
 * @sluice/node run. Then, in Chromium, the app's startNode() pays that headless peer through that relay with
 * fetch('/api/v1/...'). And a plain static page with no bundler (an import map) starts a node too.
 */

/** What `npm install sluice` may bring at most (measured: 1 package, 3.4 MB of files; decision 0042). */
const LIGHT_MAX_PACKAGES = 1
const LIGHT_MAX_BYTES = 5_000_000

const repo = fileURLToPath(new URL('../..', import.meta.url))
const vite = join(repo, 'node_modules/vite/bin/vite.js')
const tsc = join(repo, 'node_modules/typescript/bin/tsc')
const rpc = inject('rpcUrl')
const deployment = inject('deployment')
const chromiumArgs = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run', '--disable-quic']

const dirs: string[] = []
const processes: SluiceProcess[] = []
let stage: Stage
/** The packed tarballs of sluice and @sluice/node. */
let light: string
let node: string
let app: string
/** The `sluice` command of the folder with both packages: whichever bin npm linked (decision 0042). */
let nodeBin: string
let browser: Browser | undefined

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(dir)
  return dir
}

/** Runs a command to completion; rejects with its output if it fails. */
function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (c: Buffer) => (output += c))
    child.stderr.on('data', (c: Buffer) => (output += c))
    child.once('error', reject)
    child.once('close', (code) => (code === 0 ? resolve(output) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`))))
  })
}

/** A long-running Node script of the test (relay, serve, vite preview), stopped in afterAll. */
function start(script: string, args: string[], cwd: string): SluiceProcess {
  const p = startSluice(args, cwd, script)
  processes.push(p)
  return p
}

async function preview(outDir: string, cwd = app): Promise<string> {
  const server = start(vite, ['preview', '--outDir', outDir, '--host', '127.0.0.1', '--port', '0'], cwd)
  const [, url] = await server.waitForOutput(/Local:\s+(http:\/\/127\.0\.0\.1:\d+\/)/)
  return url!
}

/** What a page fetched, its workers included: path and status. */
function fetched(context: BrowserContext): Map<string, number> {
  const seen = new Map<string, number>()
  context.on('response', (response) => seen.set(new URL(response.url()).pathname, response.status()))
  return seen
}

type Answer = { status: number; body: unknown }

/** fetch() in the page, as the dApp calls the node. */
function api(page: Page, method: string, path: string, body?: unknown): Promise<Answer> {
  return page.evaluate(
    async ({ method, path, body }) => {
      const json = { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
      const response = await fetch(path, { method, ...(body === undefined ? {} : json) })
      return { status: response.status, body: await response.json() }
    },
    { method, path, body },
  )
}

async function fund(address: Address) {
  await anvilClient(rpc, generatePrivateKey()).setBalance({ address, value: parseEther('10') })
}

/** A test token of this file's own (the page registers it), so no other test's channels share its network. */
async function deployToken(): Promise<Address> {
  const key = generatePrivateKey()
  await fund(privateKeyToAddress(key))
  const client = anvilClient(rpc, key)
  const hash = await client.deployContract({ abi: CustomToken.abi, bytecode: bytecode.CustomToken, args: [10n ** 24n, 18, 'Test Token', 'TST'] })
  return getAddress((await client.waitForTransactionReceipt({ hash })).contractAddress!)
}

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs })
})

afterAll(async () => {
  await browser?.close()
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM')
  await Promise.all(processes.map((p) => p.exited))
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('the sluice package', () => {
  test('both pack with npm pack: sluice with the built browser files and the light bin, @sluice/node with the CLI only', async () => {
    stage = await stagePackages()
    dirs.push(stage.dir)
    const packed = tempDir('sluice-pack-')
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', packed], stage.sluice)
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', packed], stage.node)
    const tarballs = readdirSync(packed).sort()
    expect(tarballs).toEqual([expect.stringMatching(/^sluice-\d+\.\d+\.\d+\.tgz$/), expect.stringMatching(/^sluice-node-\d+\.\d+\.\d+\.tgz$/)])
    ;[light, node] = tarballs.map((t) => join(packed, t)) as [string, string]
    const listing = await run('tar', ['-tzf', light], packed)
    // Lean: the built files, the bin, the README; no sources, tests or contracts.
    expect(listing).toContain('package/dist/browser/index.js')
    expect(listing).toContain('package/dist/browser/index.d.ts')
    expect(listing).toContain('package/dist/sluice/secp256k1.wasm')
    expect(listing).toContain('package/dist/react/index.js')
    expect(listing).toContain('package/dist/react/index.d.ts')
    // sluice/react keeps React out of the page module: only a page that imports sluice/react loads React, and
    // sluice/react brings no second copy of the node's page code (it imports sluice/browser).
    const pageModule = readFileSync(join(stage.sluice, 'dist/browser/index.js'), 'utf8')
    expect(pageModule).not.toMatch(/\breact\b|useSyncExternalStore|createElement/i)
    const reactModule = readFileSync(join(stage.sluice, 'dist/react/index.js'), 'utf8')
    const imports = [...reactModule.matchAll(/\bfrom\s*"([^"]+)"/g)].map((m) => m[1])
    expect(imports.sort()).toEqual(['react', 'sluice/browser'])
    expect(reactModule).not.toContain('serviceWorker')
    expect(listing).toContain('package/dist/cli/light.js')
    expect(listing).toContain('package/openapi.json')
    expect(listing).toContain('package/dist/client/index.js')
    expect(listing).toContain('package/dist/client/index.d.ts')
    expect(listing).not.toMatch(/^package\/(src|test|contracts|worker|scripts)\//m)
    const nodeListing = await run('tar', ['-tzf', node], packed)
    expect(nodeListing).toContain('package/dist/cli/main.js')
    // The worker files come from the sluice package only.
    expect(nodeListing).not.toMatch(/^package\/(src|test|contracts|worker|scripts|dist\/sluice|dist\/browser)\//m)
  }, 120_000)

  test('the sluice tarball alone installs into a fresh Vite app: one package, a few MB, no install script; its bin points at @sluice/node for the rest', async () => {
    app = tempDir('sluice-app-')
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
    writeFileSync(join(app, 'index.html'), '<!doctype html><html><body><script type="module" src="/main.ts"></script></body></html>')
    writeFileSync(
      join(app, 'main.ts'),
      ["import { startNode } from 'sluice/browser'", '', '// The test calls it with its chain and peers.', 'Object.assign(window, { startNode })', ''].join(
        '\n',
      ),
    )
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG))
    // What a dApp installs: sluice alone, no dependency and no install script.
    const installed = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', light], app)
    expect(installed).not.toMatch(/script/i)
    const packages = installedPackages(join(app, 'node_modules'))
    expect(packages.map((p) => p.slice(app.length + 1))).toEqual(['node_modules/sluice'])
    expect(packages.length).toBeLessThanOrEqual(LIGHT_MAX_PACKAGES)
    expect(diskBytes(join(app, 'node_modules'))).toBeLessThan(LIGHT_MAX_BYTES)
    // The node's commands are not there: the bin says what to install.
    const serve = await run('npx', ['sluice', 'relay'], app).then(
      () => 'exit 0',
      (e: Error) => e.message,
    )
    expect(serve).toMatch(/exited with 2:\nsluice relay: .*npm install @sluice\/node\n$/)
  }, 60_000)

  test('npx sluice init public/ writes the worker files into the app', async () => {
    mkdirSync(join(app, 'public'))
    const init = await run('npx', ['sluice', 'init', 'public/'], app)
    expect(init).toMatch(/^Wrote \d+ files to public\/:$/m)
    expect(init).toContain('public/sluice-sw.js')
    expect(init).toContain('public/sluice/node.worker.js')
    expect(readdirSync(join(app, 'public/sluice'))).toContain('secp256k1.wasm')
    await writeDeployment(join(app, 'public/deployments/31337.json'), deployment)
  })

  test("@sluice/node's tarball installs with the sluice it depends on into a node's host folder", async () => {
    // A node's host: @sluice/node with the sluice it depends on, from the cache `npm ci` filled; anvil, an
    // optional dependency, is not needed.
    const host = tempDir('sluice-host-')
    writeFileSync(join(host, 'package.json'), JSON.stringify({ name: 'host', private: true }))
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--omit=optional', light, node], host)
    nodeBin = join(host, 'node_modules/.bin/sluice')
    expect(await run(process.execPath, [nodeBin, '--version'], host)).toBe(`${JSON.parse(readFileSync(join(stage.sluice, 'package.json'), 'utf8')).version}\n`)
    expect(installedPackages(join(host, 'node_modules')).map((p) => p.slice(host.length + 1))).toEqual(
      expect.arrayContaining(['node_modules/sluice', 'node_modules/@sluice/node', 'node_modules/viem', 'node_modules/libp2p']),
    )
  }, 120_000)

  test("sluice/browser's and sluice/client's declarations type-check in a consumer with sluice alone (skipLibCheck false, strict, moduleResolution bundler) and carry the real types", async () => {
    // One file per entry, naming no other package's types: viem and idb are not there, and need not be (decision 0048).
    const installed = join(app, 'node_modules/sluice')
    const files = declarationFiles(installed)
    expect(files).toEqual(['dist/browser/index.d.ts', 'dist/client/index.d.ts', 'dist/react/index.d.ts'])
    const imports = Object.fromEntries(files.map((file) => [file, packagesImported(readFileSync(join(installed, file), 'utf8'))]))
    expect(imports).toEqual({ 'dist/browser/index.d.ts': [], 'dist/client/index.d.ts': [], 'dist/react/index.d.ts': ['react', 'sluice/browser'] })
    for (const file of files) expect(readFileSync(join(installed, file), 'utf8')).not.toMatch(/\b(from|import)\s*\(?\s*['"](viem|idb)['"/]/)
    expect(installedPackages(join(app, 'node_modules')).map((p) => p.slice(app.length + 1))).toEqual(['node_modules/sluice'])
    // uses.ts must check; each wrong use beside it must not, so the types are real rather than `any`. sluice/client's
    // answers are typed from openapi.json (decision 0046).
    writeFileSync(join(app, 'uses.ts'), CONSUMER_USES)
    writeFileSync(join(app, 'wrong.ts'), CONSUMER_WRONG)
    const failed = await run(process.execPath, [tsc, '-p', '.'], app).then(
      () => '',
      (e: Error) => e.message,
    )
    rmSync(join(app, 'wrong.ts'))
    rmSync(join(app, 'uses.ts'))
    const errors = failed.split('\n').filter((line) => /error TS\d+/.test(line))
    expect(errors).toEqual(CONSUMER_WRONG_LINES.map((line) => expect.stringMatching(new RegExp(`^wrong\\.ts\\(${line},\\d+\\): error TS2\\d+: `))))
  }, 120_000)

  test("a Vite app's startNode() opens a channel to a headless peer over libp2p and pays it through fetch('/api/v1/...')", async () => {
    await run(process.execPath, [vite, 'build', '--logLevel', 'warn'], app)
    const relay = start(nodeBin, ['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws'], app)
    await relay.waitForOutput(/Press Ctrl-C to stop/)
    const relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!

    const peerKey = generatePrivateKey()
    const peerAddress = privateKeyToAddress(peerKey)
    const peerArgs = ['serve', '--rpc', rpc, '--deployment', join(app, 'public/deployments/31337.json'), '--key', peerKey]
    peerArgs.push('--data-dir', tempDir('sluice-peer-'), '--api', '127.0.0.1:0', '--confirmations', '0', '--polling-interval', '50')
    peerArgs.push('--environment', 'development', '--relay', relayAddress)
    const peer = start(nodeBin, peerArgs, app)
    const [url, [, peerApi]] = await Promise.all([preview('dist'), peer.waitForOutput(/REST API: (\S+)\n/, 60_000)])

    const key = generatePrivateKey()
    const address = privateKeyToAddress(key)
    const [token] = await Promise.all([deployToken(), fund(address)])
    const context = await browser!.newContext()
    const seen = fetched(context)
    const page = await context.newPage()
    await page.goto(url!)
    await page.waitForFunction(() => 'startNode' in window)
    await page.evaluate(
      async (options) => {
        const { startNode } = window as unknown as { startNode: (o: unknown) => Promise<unknown> }
        Object.assign(window, { node: await startNode(options) })
      },
      { rpc, deployment: '/deployments/31337.json', key, relay: [relayAddress], confirmations: 0, pollingInterval: 50, environment: 'development' },
    )

    expect(await api(page, 'GET', '/api/v1/address')).toEqual({ status: 200, body: { our_address: address } })
    expect((await api(page, 'PUT', `/api/v1/tokens/${token}`)).status).toBe(201)
    expect((await api(page, 'POST', `/api/v1/_testing/tokens/${token}/mint`, { to: address, value: '1000' })).status).toBe(200)
    const opened = await api(page, 'PUT', '/api/v1/channels', { partner_address: peerAddress, token_address: token, total_deposit: '1000' })
    expect(opened).toMatchObject({ status: 201, body: { partner_address: peerAddress, balance: '1000', state: 'opened' } })
    const paid = await api(page, 'POST', `/api/v1/payments/${token}/${peerAddress}`, { amount: '10', identifier: '1' })
    expect(paid).toMatchObject({ status: 200, body: { initiator_address: address, target_address: peerAddress, amount: '10', identifier: '1' } })

    // The peer, in its own process, holds the payment: its side of the channel and its history say so.
    await eventually(async () => expect((await call('GET', `${peerApi}/channels/${token}/${address}`)).body).toMatchObject({ balance: '10' }))
    expect((await call('GET', `${peerApi}/payments/${token}`)).body).toEqual([
      expect.objectContaining({ event: 'EventPaymentReceivedSuccess', initiator: address, amount: '10', identifier: '1' }),
    ])
    // The worker came from where init put it, with libsecp256k1's WASM beside it and libp2p loaded for the relay.
    expect(seen.get('/sluice/node.worker.js')).toBe(200)
    // Fetched in the background once the node answers (secp256k1Wasm: 'background'): it may come after the first answer.
    await expect.poll(() => seen.get('/sluice/secp256k1.wasm'), { timeout: 20_000 }).toBe(200)
    expect([...seen.keys()].some((path) => /^\/sluice\/nodeLibp2p-[\w-]+\.js$/.test(path))).toBe(true)
    await page.evaluate(() => (window as unknown as { node: { stop(): Promise<void> } }).node.stop())
    await context.close()
  }, 120_000)

  test('a Vite app with sluice/react shows the node and a channel it opens, kept current by the push events', async () => {
    // Its own app: the sluice tarball with React beside it (from the cache `npm ci` filled), as a React dApp has it.
    const reactApp = tempDir('sluice-react-app-')
    const devDependencies = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).devDependencies as Record<string, string>
    writeFileSync(join(reactApp, 'package.json'), JSON.stringify({ name: 'react-app', private: true, type: 'module' }))
    const install = [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      light,
      `react@${devDependencies.react}`,
      `react-dom@${devDependencies['react-dom']}`,
      // What a React dApp in TypeScript has: React's types, and nothing of viem or idb.
      `@types/react@${devDependencies['@types/react']}`,
      `@types/react-dom@${devDependencies['@types/react-dom']}`,
    ]
    await run('npm', install, reactApp)
    mkdirSync(join(reactApp, 'public'))
    await run(process.execPath, [join(reactApp, 'node_modules/sluice/bin/sluice.mjs'), 'init', 'public'], reactApp)
    await writeDeployment(join(reactApp, 'public/deployments/31337.json'), deployment)
    writeFileSync(join(reactApp, 'index.html'), '<!doctype html><html><body><div id="root"></div><script type="module" src="/main.ts"></script></body></html>')
    writeFileSync(
      join(reactApp, 'main.ts'),
      `import { createElement as h } from 'react'
import { createRoot } from 'react-dom/client'
import type { StartNodeOptions } from 'sluice/browser'
import { SluiceProvider, useChannels, useNodeStatus, useSluice } from 'sluice/react'

function View() {
  const { status } = useSluice()
  const node = useNodeStatus()
  const channels = useChannels()
  return h('div', null,
    h('p', { id: 'provider' }, status),
    h('p', { id: 'status' }, node.data?.status ?? ''),
    h('ul', { id: 'channels' }, (channels.data ?? []).map((c) => h('li', { key: c.channel_identifier }, c.partner_address + ' ' + c.balance))),
  )
}

// The test mounts it with its chain's options.
Object.assign(window, { mount: (options: StartNodeOptions) => createRoot(document.getElementById('root')!).render(h(SluiceProvider, { options }, h(View))) })
`,
    )
    // Its main.ts type-checks as the other app's files do, with React's types; misused hooks do not.
    writeFileSync(join(reactApp, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG))
    writeFileSync(join(reactApp, 'wrong.ts'), REACT_WRONG)
    const failed = await run(process.execPath, [tsc, '-p', '.'], reactApp).then(
      () => '',
      (e: Error) => e.message,
    )
    rmSync(join(reactApp, 'wrong.ts'))
    const errors = failed.split('\n').filter((line) => /error TS\d+/.test(line))
    expect(errors).toEqual(REACT_WRONG_LINES.map((line) => expect.stringMatching(new RegExp(`^wrong\\.ts\\(${line},\\d+\\): error TS2\\d+: `))))
    await run(process.execPath, [vite, 'build', '--logLevel', 'warn'], reactApp)
    // React and sluice/react's hooks are in the app's own bundle.
    const assets = readdirSync(join(reactApp, 'dist/assets')).filter((f) => f.endsWith('.js'))
    const bundled = assets.map((f) => readFileSync(join(reactApp, 'dist/assets', f), 'utf8')).join('\n')
    expect(bundled).toContain('useSyncExternalStore')
    const url = await preview('dist', reactApp)

    const key = generatePrivateKey()
    const address = privateKeyToAddress(key)
    const [token] = await Promise.all([deployToken(), fund(address)])
    const context = await browser!.newContext()
    const page = await context.newPage()
    await page.goto(url)
    await page.waitForFunction(() => 'mount' in window)
    await page.evaluate((options) => (window as unknown as { mount: (o: unknown) => void }).mount(options), {
      rpc,
      deployment: '/deployments/31337.json',
      key,
      confirmations: 0,
      pollingInterval: 50,
      environment: 'development',
    })
    await expect.poll(() => page.textContent('#provider'), { timeout: 30_000 }).toBe('ready')
    await expect.poll(() => page.textContent('#status')).toBe('ready')
    expect(await page.locator('#channels li').count()).toBe(0)

    // The page opens a channel through fetch, as a dApp's code does; the list shows it without being asked.
    const partner = privateKeyToAddress(generatePrivateKey())
    expect((await api(page, 'PUT', `/api/v1/tokens/${token}`)).status).toBe(201)
    expect((await api(page, 'POST', `/api/v1/_testing/tokens/${token}/mint`, { to: address, value: '700' })).status).toBe(200)
    const opened = await api(page, 'PUT', '/api/v1/channels', { partner_address: partner, token_address: token, total_deposit: '700' })
    expect(opened.status).toBe(201)
    await expect.poll(() => page.locator('#channels li').allTextContents(), { timeout: 20_000 }).toEqual([`${partner} 700`])
    await context.close()
  }, 120_000)

  test('a plain static page with no bundler imports it through an import map and starts a node without libp2p', async () => {
    const plain = join(app, 'plain')
    mkdirSync(plain)
    await run(process.execPath, [join(app, 'node_modules/sluice/bin/sluice.mjs'), 'init', 'plain'], app)
    writeFileSync(
      join(plain, 'index.html'),
      [
        '<!doctype html><html><body>',
        '<script type="importmap">{ "imports": { "sluice/browser": "/sluice/browser.js" } }</script>',
        '<script type="module">import { startNode } from \'sluice/browser\'; Object.assign(window, { startNode })</script>',
        '</body></html>',
      ].join('\n'),
    )
    const url = await preview('plain')
    const key = generatePrivateKey()
    const context = await browser!.newContext()
    const seen = fetched(context)
    const page = await context.newPage()
    await page.goto(url)
    await page.waitForFunction(() => 'startNode' in window)
    await page.evaluate(
      async (options) => {
        const { startNode } = window as unknown as { startNode: (o: unknown) => Promise<unknown> }
        Object.assign(window, { node: await startNode(options) })
      },
      { rpc, deployment, key, confirmations: 0, pollingInterval: 50 },
    )
    expect(await api(page, 'GET', '/api/v1/address')).toEqual({ status: 200, body: { our_address: privateKeyToAddress(key) } })
    // Fetched in the background once the node answers (secp256k1Wasm: 'background'): it may come after the first answer.
    await expect.poll(() => seen.get('/sluice/secp256k1.wasm'), { timeout: 20_000 }).toBe(200)
    // The chunk that loads it instantiates it (its import would fail otherwise, and the node would sign in pure JS).
    const loader = readdirSync(join(plain, 'sluice')).find(
      (f) => f.endsWith('.js') && readFileSync(join(plain, 'sluice', f), 'utf8').includes('secp256k1.wasm'),
    )
    // A string: vitest would rewrite an import() written in this file.
    expect(await page.evaluate(`import('/sluice/${loader}').then((chunk) => Object.keys(chunk).length)`)).toBeGreaterThan(0)
    // Without a relay the libp2p chunk is never fetched.
    expect([...seen.keys()].filter((path) => path.includes('libp2p'))).toEqual([])
    await page.evaluate(() => (window as unknown as { node: { stop(): Promise<void> } }).node.stop())
    await context.close()
  })
})
