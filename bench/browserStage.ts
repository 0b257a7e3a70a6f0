// The stage the in-page benches share (bench/browser.ts, and the page's curves in bench/curves.ts): the package
// built into a temporary folder and copied by its own `sluice init` into a static site (a plain page with an import
// map), served by a small static server; Chromium headless (playwright-core); anvil with the contracts and TTT
// registered; a `sluice relay` of the build, and `sluice serve` peers of it started by the bench.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import type { Hex } from 'viem'
import { build } from 'vite'
import { buildPackages } from '../scripts/build.ts'
import { staticServer } from '../scripts/staticServer.ts'
import { writeDeployment } from '../src/devnet/deploymentFile.ts'
import { relayListening, startSluice, stopSluice, type SluiceProcess } from '../test/cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from '../test/integration/support/devnet.ts'
import { linkInstall } from '../test/package/support/stage.ts'

const repo = fileURLToPath(new URL('..', import.meta.url))
const chromiumArgs = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--no-first-run', '--disable-quic']

/**
 * The page: startNode from the package through an import map, and the measuring loops, in plain JavaScript (the
 * bench calls them by name, so nothing of this file's TypeScript has to run in the browser).
 */
export const PAGE = `<!doctype html><html><body>
<script type="importmap">{ "imports": { "sluice/browser": "/sluice/browser.js" } }</script>
<script type="module">
import { startNode } from 'sluice/browser'

async function timed(request) {
  const t0 = performance.now()
  await request()
  return performance.now() - t0
}

async function viaServiceWorker(path) {
  const response = await fetch(path)
  const body = await response.json()
  if (!response.ok) throw new Error(path + ' answered ' + response.status + ': ' + JSON.stringify(body))
  return body
}

window.bench = {
  async start(options) {
    const t0 = performance.now()
    window.node = await startNode(options)
    const started = performance.now()
    const { our_address } = await viaServiceWorker('/api/v1/address')
    const answered = performance.now()
    return { address: our_address, startNode: started - t0, answered: answered - t0, sinceNavigation: answered }
  },
  async stop() {
    await window.node.stop()
    window.node = undefined
  },
  /** node.exportKeystore(): the key encrypted with scrypt N = 2^18 in the node's worker; its time and its KDF's cost. */
  async exportKeystore() {
    const t0 = performance.now()
    const keystore = await window.node.exportKeystore()
    return { ms: performance.now() - t0, kdfparams: keystore.crypto.kdfparams }
  },
  /** The passphrase KDF candidates, timed in a module worker (bench/kdfWorker.ts). */
  kdf(runs) {
    const worker = new Worker('/kdf.worker.js', { type: 'module' })
    return new Promise((resolve, reject) => {
      worker.onmessage = ({ data }) => resolve(data)
      worker.onerror = (e) => reject(new Error(e.message))
      worker.postMessage(runs)
    }).finally(() => worker.terminate())
  },
  /** The node's export kept in the page (for the stored-payments curve), and its row counts. */
  async exportCounts() {
    window.exported = await window.node.exportState()
    return (await import('/pad.js')).counts(window.exported)
  },
  /** What the payments since \`before\` left in the export: the padding's templates, as lossless JSON. */
  async shape(before, payments) {
    return (await import('/pad.js')).shape(window.exported, before, payments)
  },
  /** Pads the stopped node's IndexedDB store with payments [from, to); the ms it took. */
  async padStore(shapeText, from, to) {
    return (await import('/pad.js')).padStore(shapeText, from, to)
  },
  /** The payment identifier of the export's first payment (a paid one, to pay again). */
  firstIdentifier() {
    return window.exported.payments[0].identifier.toString()
  },
  /** n requests one after the other through the service worker, each answered with success; each one's ms. */
  async timeCalls(method, path, body, n) {
    const ms = []
    for (let i = 0; i < n; i++) {
      const t0 = performance.now()
      const answer = await this.call(method, path, body)
      if (answer.status >= 300) throw new Error(method + ' ' + path + ' answered ' + answer.status + ': ' + JSON.stringify(answer.body))
      ms.push(performance.now() - t0)
    }
    return ms
  },
  async estimate() {
    const { usage, quota } = await navigator.storage.estimate()
    return { usage, quota }
  },
  call(method, path, body) {
    return fetch(path, { method, ...(body == null ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) }).then(async (r) => ({ status: r.status, body: await r.json() }))
  },
  /** n sequential requests through the service worker and n on the proxy, each after its warm-up. */
  async latencies(path, warmUp, n) {
    const serviceWorker = []
    const proxy = []
    for (let i = 0; i < warmUp; i++) await viaServiceWorker(path)
    for (let i = 0; i < n; i++) serviceWorker.push(await timed(() => viaServiceWorker(path)))
    for (let i = 0; i < warmUp; i++) await window.node.channels()
    for (let i = 0; i < n; i++) proxy.push(await timed(() => window.node.channels()))
    return { serviceWorker, proxy }
  },
  /** n payments of 1 to the target, one at a time, through the service worker (fetch) or on the proxy (node.pay()). */
  async paySequential(token, target, n, via) {
    const latencies = []
    const failures = []
    for (let i = 0; i < n; i++) {
      const t = performance.now()
      try {
        if (via === 'proxy') await window.node.pay(token, target, { amount: '1' })
        else {
          const response = await fetch('/api/v1/payments/' + token + '/' + target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":"1"}' })
          const text = await response.text()
          if (response.status !== 200) {
            failures.push(response.status + ' ' + text)
            continue
          }
        }
        latencies.push(performance.now() - t)
      } catch (e) {
        failures.push(String(e))
      }
    }
    return { latencies, failures: failures.length, firstFailures: failures.slice(0, 3) }
  },
  /** n payments of 1 to the target, inFlight at a time through the service worker (or on the proxy); each one's latency, and the failures. */
  async pay(token, target, n, inFlight, via) {
    const latencies = []
    const failures = []
    let next = 0
    const t0 = performance.now()
    await Promise.all(Array.from({ length: inFlight }, async () => {
      while (next < n) {
        next++
        const t = performance.now()
        try {
          if (via === 'proxy') {
            await window.node.pay(token, target, { amount: '1' })
            latencies.push(performance.now() - t)
            continue
          }
          const response = await fetch('/api/v1/payments/' + token + '/' + target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":"1"}' })
          const text = await response.text()
          if (response.status === 200) latencies.push(performance.now() - t)
          else failures.push(response.status + ' ' + text)
        } catch (e) {
          failures.push(String(e))
        }
      }
    }))
    return { seconds: (performance.now() - t0) / 1000, latencies, failures: failures.length, firstFailures: failures.slice(0, 3) }
  },
}
</script>
</body></html>
`

/** One Chromium process: what it is (its --type, or "browser"), its CPU seconds (user + system) and resident bytes. */
export type ChromiumProcess = { pid: number; type: string; cpuSeconds: number; rssBytes: number }

/**
 * This process's Chromium descendants, from /proc (Linux): the browser, its renderers (a page, its service worker
 * and its workers live in one) and its helpers, not the sluice processes or anvil beside them.
 */
export function chromiumProcesses(): ChromiumProcess[] {
  const ticksPerSecond = 100
  const pageBytes = 4096
  const stats = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .flatMap((pid) => {
      try {
        const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
        const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'))
        const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
        return [
          {
            pid: Number(pid),
            comm,
            ppid: Number(fields[1]),
            cpu: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond,
            rss: Number(fields[21]) * pageBytes,
          },
        ]
      } catch {
        return []
      }
    })
  const byPid = new Map(stats.map((s) => [s.pid, s]))
  const descends = (s: { ppid: number }): boolean => {
    for (let p = s.ppid, hops = 0; p > 1 && hops < 64; p = byPid.get(p)?.ppid ?? 0, hops++) if (p === process.pid) return true
    return false
  }
  const typeOf = (pid: number) => {
    try {
      return /--type=(\S+)/.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '))?.[1] ?? 'browser'
    } catch {
      return 'gone'
    }
  }
  return stats.filter((s) => /chrom/i.test(s.comm) && descends(s)).map((s) => ({ pid: s.pid, type: typeOf(s.pid), cpuSeconds: s.cpu, rssBytes: s.rss }))
}

/** The duration of the latest `performance.measure(name)` in `page`'s node worker (worker/node.worker.ts). */
export async function nodeWorkerMeasure(page: Page, name: string): Promise<number> {
  const worker = page
    .workers()
    .filter((w) => w.url().includes('node.worker'))
    .at(-1)
  if (!worker) throw new Error("the page has no node's worker")
  return (await worker.evaluate(`performance.getEntriesByName(${JSON.stringify(name)}).at(-1).duration`)) as number
}

/**
 * The JS heap in use, after a full GC, of `page`'s dedicated worker whose URL holds `urlPart` (the node's worker:
 * 'node.worker'), read over the DevTools protocol (a worker has no performance.memory).
 */
export async function workerHeapBytes(page: Page, urlPart: string): Promise<number> {
  const cdp = await page.context().newCDPSession(page)
  try {
    const attached = new Promise<string>((resolve) =>
      cdp.on('Target.attachedToTarget', (e) => {
        if (e.targetInfo.type === 'worker' && e.targetInfo.url.includes(urlPart)) resolve(e.sessionId)
      }),
    )
    const answers = new Map<number, (result: unknown) => void>()
    cdp.on('Target.receivedMessageFromTarget', (e) => {
      const message = JSON.parse(e.message) as { id?: number; result?: unknown; error?: unknown }
      if (message.id !== undefined) answers.get(message.id)?.(message.result ?? message.error)
    })
    // Not flattened: Playwright's CDPSession has no session id to send with, so messages go through the target.
    await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false })
    const sessionId = await Promise.race([attached, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no worker ${urlPart}`)), 5000))])
    let id = 0
    const send = (method: string) =>
      new Promise<unknown>((resolve) => {
        answers.set(++id, resolve)
        void cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method }) })
      })
    await send('HeapProfiler.collectGarbage')
    return ((await send('Runtime.getHeapUsage')) as { usedSize: number }).usedSize
  } finally {
    await cdp.detach().catch(() => {})
  }
}

/** CPU seconds of every Chromium process of this one. */
export function chromiumCpuSeconds(): number {
  return chromiumProcesses().reduce((sum, p) => sum + p.cpuSeconds, 0)
}

/** The site, served as `npm run demo` serves its page; resolves to its URL once it listens. */
function serveStatic(root: string): Promise<{ server: Server; url: string }> {
  const server = staticServer(root)
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` }))
  })
}

export type Call = { status: number; body: unknown }
export type Started = { address: string; startNode: number; answered: number; sinceNavigation: number }
export type Paid = { seconds: number; latencies: number[]; failures: number; firstFailures: string[] }

/** Calls `bench.<method>(...args)` in the page (a string: nothing of tsx's output goes into the browser). */
export function inPage<T>(page: Page, method: string, ...args: unknown[]): Promise<T> {
  return page.evaluate(`window.bench.${method}(...${JSON.stringify(args)})`) as Promise<T>
}

/** A page of the site in `context`, and how to (re)load it until the bench's functions are there. */
export type BenchPage = { page: Page; open(): Promise<void> }

export type BrowserStage = {
  /** The temporary folder: the packages (`packages/`, `node_modules/`), the site, and the peers' data. */
  dir: string
  net: Devnet
  /** The deployment as the site serves it (a page's `deployment` option). */
  deploymentPath: string
  relayAddress: string
  url: string
  browser: Browser
  /** With `persistent`: the context of a Chromium profile on disk, as a person's browser keeps its IndexedDB. */
  profile?: BrowserContext
  /** A fresh context, in memory as Playwright's contexts are (IndexedDB included). */
  newContext(): Promise<BrowserContext>
  /** Page errors seen so far in any page of newPage. */
  pageErrors: string[]
  /** Starts the build's `sluice <args>` (stopped at close). */
  start(args: string[]): SluiceProcess
  /** `sluice serve` arguments for a peer with `key` and data in `dataDir`, on the relay, reading the chain each second. */
  serveArgs(key: Hex, dataDir: string): string[]
  newPage(context: BrowserContext): Promise<BenchPage>
  close(): Promise<void>
}

/**
 * Builds the package and the site (with `libs`: bench modules built for the browser into it), starts anvil with
 * `funded` keys holding TTT, the relay, the site's server and Chromium (with `persistent`, on a profile on disk).
 */
export async function openBrowserStage(options: { funded: Hex[]; libs?: Record<string, string>; persistent?: boolean }): Promise<BrowserStage> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-browser-'))
  const processes: SluiceProcess[] = []
  const pageErrors: string[] = []
  let net: Devnet | undefined
  let site: Server | undefined
  let browser: Browser | undefined
  let profile: BrowserContext | undefined
  const close = async () => {
    await profile?.close().catch(() => {})
    await browser?.close().catch(() => {})
    await Promise.all(processes.map((p) => stopSluice(p)))
    site?.closeAllConnections()
    await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)))
    await net?.stop()
    // node_modules holds links to the repository's: removing them leaves what they point at.
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    // Both packages as `npm pack` takes them, with fresh dist/ folders, laid out as installed (linkInstall); the
    // bin is @sluice/node's, which runs its dist/cli/ (no src/ above it).
    await buildPackages({ packagesDir: join(dir, 'packages'), declarations: false })
    linkInstall(dir)
    const bin = join(dir, 'packages/node/bin/sluice.mjs')
    const start = (args: string[]) => {
      const p = startSluice(args, dir, bin)
      processes.push(p)
      return p
    }
    mkdirSync(join(dir, 'site'))
    const init = start(['init', 'site'])
    if ((await init.exited).code !== 0) throw new Error(`sluice init failed:\n${init.stdout()}${init.stderr()}`)
    writeFileSync(join(dir, 'site/index.html'), PAGE)
    const libs = { 'pad.js': 'bench/idbPad.ts', ...options.libs }
    await build({
      root: repo,
      configFile: false,
      logLevel: 'warn',
      publicDir: false,
      build: {
        outDir: join(dir, 'site'),
        emptyOutDir: false,
        target: 'es2022',
        reportCompressedSize: false,
        lib: {
          entry: Object.fromEntries(Object.entries(libs).map(([file, entry]) => [file.replace(/\.js$/, ''), entry])),
          formats: ['es'],
          fileName: (_, name) => `${name}.js`,
        },
      },
    })

    net = await startDevnet(options.funded)
    const deploymentPath = `/deployments/${net.deployment.chainId}.json`
    const deploymentFile = join(dir, 'site', deploymentPath)
    await writeDeployment(deploymentFile, net.deployment)
    const relay = start(['relay', '--listen', '/ip4/127.0.0.1/tcp/0/ws'])
    await relay.waitForOutput(/Press Ctrl-C to stop/)
    const relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
    const served = await serveStatic(join(dir, 'site'))
    site = served.server
    const launch = { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: chromiumArgs }
    if (options.persistent) {
      profile = await chromium.launchPersistentContext(join(dir, 'profile'), launch)
      browser = profile.browser()!
    } else browser = await chromium.launch(launch)
    const rpc = net.anvil.rpcUrl
    return {
      dir,
      net,
      deploymentPath,
      relayAddress,
      url: served.url,
      browser: browser!,
      pageErrors,
      ...(profile ? { profile } : {}),
      newContext: () => browser!.newContext(),
      start,
      // The chain is read every second, the nodes' default: reading it every 50 ms took a tenth of the page's
      // worker (each fetch costs it about 3 ms in Chromium) and slowed the payments timed beside it.
      serveArgs: (key, dataDir) =>
        ['serve', '--rpc', rpc, '--deployment', deploymentFile, '--key', key, '--data-dir', dataDir, '--api', '127.0.0.1:0'].concat([
          '--confirmations',
          '0',
          '--environment',
          'development',
          '--relay',
          relayAddress,
        ]),
      async newPage(context) {
        const page = await context.newPage()
        page.on('pageerror', (e) => pageErrors.push(e.message))
        return {
          page,
          async open() {
            await page.goto(served.url)
            await page.waitForFunction('window.bench !== undefined')
          },
        }
      },
      close,
    }
  } catch (e) {
    await close()
    throw e
  }
}
