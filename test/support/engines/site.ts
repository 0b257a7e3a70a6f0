/**
 * A dApp's site as its users' browsers get it: both packages built into a temporary folder, copied by their own
 * `sluice init` into a static site with the page given, served by the demo's static server; anvil with the
 * contracts and TTT registered, a `sluice relay` of the build, and `sluice serve` peers of it started on demand.
 * The in-page benches (bench/browserStage.ts) and the engine tests (test/engines/) share it; no browser here.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Hex } from 'viem'
import { build } from 'vite'
import { buildPackages } from '../../../scripts/build.ts'
import { staticServer } from '../../../scripts/staticServer.ts'
import { writeDeployment } from '../../../src/devnet/deploymentFile.ts'
import { relayListening, type StartSluiceOptions, startSluice, stopSluice, type SluiceProcess } from '../../cli/sluiceProcess.ts'
import { startDevnet, type Devnet } from '../../integration/support/devnet.ts'
import { linkInstall } from '../../package/support/stage.ts'

const repo = fileURLToPath(new URL('../../..', import.meta.url))

export type Site = {
  /** The temporary folder: the packages (`packages/`, `node_modules/`), the site, and the peers' data. */
  dir: string
  net: Devnet
  /** The deployment as the site serves it (a page's `deployment` option). */
  deploymentPath: string
  /** What the relay printed first: its --announce address when `relayArgs` gives one. */
  relayAddress: string
  /** With `sourceMaps`: the folder of the node worker's source maps (scripts/build.ts, BuildOptions.sourceMaps). */
  sourceMapsDir?: string
  /** The site's root URL (http://127.0.0.1:<port>/: a secure context in every engine; https://<name>:<port>/ with `https`). */
  url: string
  /** Starts the build's `sluice <args>` (stopped at close). */
  start(args: string[], options?: StartSluiceOptions): SluiceProcess
  /** `sluice serve` arguments for a peer with `key` and data in `dataDir`, on the relay, reading the chain each second. */
  serveArgs(key: Hex, dataDir: string): string[]
  close(): Promise<void>
}

/** Serving the site over HTTPS under a name (on 127.0.0.1), with this certificate and key (PEM files). */
export type SiteHttps = { name: string; certFile: string; keyFile: string }

/**
 * The site, served as `npm run demo` serves its page (over HTTPS with `https`: the same answers through a TLS
 * server); resolves to its URL once it listens.
 */
function serveStatic(root: string, https?: SiteHttps): Promise<{ server: Server; url: string }> {
  const plain = staticServer(root)
  const server = https
    ? createHttpsServer({ cert: readFileSync(https.certFile), key: readFileSync(https.keyFile) }, (req, res) => plain.emit('request', req, res))
    : plain
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port
      resolve({ server, url: https ? `https://${https.name}:${port}/` : `http://127.0.0.1:${port}/` })
    })
  })
}

/**
 * Builds the packages and the site: `index.html` is `page`; `libs` are modules of the repository built for the
 * browser into it (file name to entry); `sourceMaps`: the node worker's source maps kept beside the site, not in it
 * (the site's files are the same). Starts anvil with `funded` keys holding TTT, the relay (`sluice relay
 * <relayArgs>`, a plain one on a free port by default) and the server (over HTTPS with `https`).
 */
export async function openSite(options: {
  page: string
  funded: Hex[]
  libs?: Record<string, string>
  https?: SiteHttps
  relayArgs?: string[]
  sourceMaps?: boolean
}): Promise<Site> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-site-'))
  const processes: SluiceProcess[] = []
  let net: Devnet | undefined
  let site: Server | undefined
  const close = async () => {
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
    const sourceMapsDir = options.sourceMaps ? join(dir, 'sourcemaps') : undefined
    await buildPackages({ packagesDir: join(dir, 'packages'), declarations: false, ...(sourceMapsDir ? { sourceMaps: sourceMapsDir } : {}) })
    linkInstall(dir)
    const bin = join(dir, 'packages/node/bin/sluice.mjs')
    const start = (args: string[], spawnOptions: StartSluiceOptions = {}) => {
      const p = startSluice(args, dir, bin, spawnOptions)
      processes.push(p)
      return p
    }
    mkdirSync(join(dir, 'site'))
    const init = start(['init', 'site'])
    if ((await init.exited).code !== 0) throw new Error(`sluice init failed:\n${init.stdout()}${init.stderr()}`)
    writeFileSync(join(dir, 'site/index.html'), options.page)
    const libs = options.libs ?? {}
    if (Object.keys(libs).length > 0)
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
    const relay = start(['relay', ...(options.relayArgs ?? ['--listen', '/ip4/127.0.0.1/tcp/0/ws'])])
    await relay.waitForOutput(/Press Ctrl-C to stop/)
    const relayAddress = relayListening(relay.stdout())!.multiaddrs[0]!
    const served = await serveStatic(join(dir, 'site'), options.https)
    site = served.server
    const rpc = net.anvil.rpcUrl
    return {
      dir,
      net,
      deploymentPath,
      relayAddress,
      ...(sourceMapsDir ? { sourceMapsDir } : {}),
      url: served.url,
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
      close,
    }
  } catch (e) {
    await close()
    throw e
  }
}
