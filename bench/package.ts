// What a browser downloads, gzipped (kB of 1000 bytes): the packages built into a temporary folder as `npm run build` builds them.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { buildPackages, type WorkerFile } from '../scripts/build.ts'

const LIBP2P = /src\/transport\/libp2p\/libp2pTransport\.ts$/

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
    // Without relays: the entry and every chunk it may load except libp2p's (viem's CCIP-read chunk included).
    const withoutLibp2p = inWorker(reachable(worker, 'node.worker.js', (f) => LIBP2P.test(f.facadeModuleId ?? '')))
    const everything = inWorker(worker.filter((f) => f.fileName.endsWith('.js')).map((f) => f.fileName))
    return {
      'page module (sluice/browser, dist/browser/index.js)': kb(gzipped(join(out, 'browser', 'index.js'))),
      'service worker (sluice-sw.js)': kb(gzipped(join(out, 'sluice-sw.js'))),
      // The node answers before the WASM has come (it loads while the node runs: a 4-6x faster curve, not a need).
      'node worker without libp2p (no relay), what loads before it answers': kb(withoutLibp2p),
      'node worker with libp2p (relays given), before it answers': kb(everything),
      'libsecp256k1 WASM, loaded while the node runs': kb(wasm),
      'build time (npm run build without the .d.ts files)': `${buildSeconds.toFixed(1)} s`,
    }
  } finally {
    rmSync(packagesDir, { recursive: true, force: true })
  }
}
