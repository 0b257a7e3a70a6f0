// What a dApp installs (`npm install sluice` from its packed tarball) and what a browser downloads, gzipped (kB of 1000
// bytes): the packages built into a temporary folder as `npm run build` builds them.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { buildPackages, type WorkerFile } from '../scripts/build.ts'
import { diskBytes, installedPackages } from '../test/package/support/installed.ts'

/** libp2p, and with the page's WebRTC bridge its WebRTC transport: the worker loads them only when given relays. */
const LIBP2P = /(src\/transport\/libp2p\/libp2pTransport|worker\/nodeLibp2p)\.ts$/
/** viem's WebSocket transport: loaded when the node is given a ws/wss endpoint, as libp2p is when given relays. */
const WEBSOCKET_RPC = /src\/chain\/webSocketTransport\.ts$/
/** The OpenAPI document's builder: loaded when a client asks for GET /openapi.json, never before the node answers. */
const OPENAPI = /src\/api\/openApiDocument\.ts$/

/** Every file reachable from the entry through imports and import(), without going into `skip`. */
function reachable(files: WorkerFile[], entry: string, skip: (file: WorkerFile) => boolean): Set<string> {
  const byName = new Map(files.map((f) => [f.fileName, f]))
  const seen = new Set<string>()
  const visit = (name: string) => {
    const file = byName.get(name)
    if (!file || seen.has(name) || skip(file)) return
    seen.add(name)
    for (const next of [...file.imports, ...file.dynamicImports]) visit(next)
  }
  visit(entry)
  return seen
}

/** `npm install` of the packed sluice package in a fresh project: the packages and the bytes it adds (decision 0042). */
function lightInstall(packageDir: string, dir: string): { packages: number; bytes: number } {
  const npm = (args: string[], cwd: string) => execFileSync('npm', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  const packed = join(dir, 'packed')
  const project = join(dir, 'project')
  mkdirSync(packed)
  mkdirSync(project)
  npm(['pack', '--ignore-scripts', '--pack-destination', packed], packageDir)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'dapp', private: true }))
  npm(['install', '--prefer-offline', '--no-audit', '--no-fund', join(packed, readdirSync(packed)[0]!)], project)
  return { packages: installedPackages(join(project, 'node_modules')).length, bytes: diskBytes(join(project, 'node_modules')) }
}

export async function benchPackage(): Promise<Record<string, string>> {
  const packagesDir = mkdtempSync(join(tmpdir(), 'sluice-bench-build-'))
  // The browser's files are all in the sluice package.
  const out = join(packagesDir, 'sluice/dist')
  try {
    const started = performance.now()
    const worker = await buildPackages({ packagesDir, declarations: false })
    const buildSeconds = (performance.now() - started) / 1000
    const gzipped = (path: string) => gzipSync(readFileSync(path)).length
    const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`
    const inWorker = (names: Iterable<string>) => [...names].reduce((sum, name) => sum + gzipped(join(out, 'sluice', name)), 0)

    const wasm = gzipped(join(out, 'sluice', 'secp256k1.wasm'))
    // Without relays and with http endpoints: the entry and every chunk it may load except libp2p's, a ws endpoint's
    // transport and openapi.json's builder (viem's CCIP-read chunk included).
    const chunkOf = (pattern: RegExp) => worker.find((f) => pattern.test(f.facadeModuleId ?? ''))
    const lazy = [LIBP2P, WEBSOCKET_RPC, OPENAPI]
    const withoutLibp2p = inWorker(reachable(worker, 'node.worker.js', (f) => lazy.some((pattern) => pattern.test(f.facadeModuleId ?? ''))))
    const openapi = chunkOf(OPENAPI)
    if (!openapi) throw new Error('no chunk of its own for src/api/openApiDocument.ts in the node worker')
    const everything = inWorker(worker.filter((f) => f.fileName.endsWith('.js')).map((f) => f.fileName))
    const installed = lightInstall(join(packagesDir, 'sluice'), packagesDir)
    return {
      'npm install sluice (packed, built without its .d.ts files, into a fresh project): packages, size of the files': `${installed.packages}, ${(installed.bytes / 1e6).toFixed(1)} MB`,
      'page module (sluice/browser, dist/browser/index.js)': kb(gzipped(join(out, 'browser', 'index.js'))),
      // react and sluice/browser stay imports: this is what sluice/react adds to a React page.
      'React bindings (sluice/react, dist/react/index.js)': kb(gzipped(join(out, 'react', 'index.js'))),
      'HTTP client (sluice/client, dist/client/index.js)': kb(gzipped(join(out, 'client', 'index.js'))),
      'service worker (sluice-sw.js)': kb(gzipped(join(out, 'sluice-sw.js'))),
      // The node answers before the WASM has come (it loads while the node runs: a 4-6x faster curve, not a need).
      'node worker without libp2p (no relay), what loads before it answers': kb(withoutLibp2p),
      'node worker with libp2p (relays given), before it answers': kb(everything - gzipped(join(out, 'sluice', openapi.fileName))),
      // Its own chunk (with @valibot/to-json-schema), loaded at the first GET /openapi.json.
      "node worker's OpenAPI document builder, loaded when asked for": kb(gzipped(join(out, 'sluice', openapi.fileName))),
      'libsecp256k1 WASM, loaded while the node runs': kb(wasm),
      'build time (npm run build without the .d.ts files)': `${buildSeconds.toFixed(1)} s`,
    }
  } finally {
    rmSync(packagesDir, { recursive: true, force: true })
  }
}
