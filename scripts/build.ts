// `npm run build`: the two packages' dist/ (README, Embed Sluice in your dApp; docs/decisions/0016-tsx-runs-the-sources.md,
// 0042-two-packages-sluice-and-sluice-node.md), and the root's LICENSE and README.md copied into each package.
//   packages/sluice/dist/browser/index.js, index.d.ts  the page's module (`sluice/browser`), self-contained, with its declarations
//   packages/sluice/dist/react/index.js, index.d.ts    `sluice/react`: the provider and hooks, react and sluice/browser left as imports
//   packages/sluice/dist/client/index.js, index.d.ts   `sluice/client`: any node's REST API over HTTP, typed, self-contained
//   (each index.d.ts is one file that imports no package but react and sluice/browser: docs/decisions/0048)
//   packages/sluice/dist/sluice-sw.js                  the service worker, one classic script
//   packages/sluice/dist/sluice/                       the node's module worker, its chunks (libp2p in its own) and secp256k1.wasm
//   packages/sluice/openapi.json                      the REST API's OpenAPI document (scripts/openapi.ts), `sluice/openapi.json`
//   packages/sluice/dist/cli/light.js                  the light bin's init, usage and version: no import but Node's own
//   packages/node/dist/cli/                            the whole `sluice` command for Node (dependencies stay imports)
//   packages/node/dist/index.js, index.d.ts            @sluice/node's Node API (`startNode`), dependencies left as imports
import { spawn } from 'node:child_process'
import { builtinModules } from 'node:module'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { build, type InlineConfig, type Plugin } from 'vite'
import { rollDeclarations } from './declarations.ts'
import { openApiJson } from './openapi.ts'
import { secp256k1Wasm } from './viteSecp256k1Wasm.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const common: InlineConfig = { root, configFile: false, logLevel: 'warn', publicDir: false }

/** The service worker's entry imports worker/sw.ts and exports nothing, so the IIFE defines no global. */
const SW_ENTRY = 'sluice:sw-entry'
const swEntry: Plugin = {
  name: 'sluice:sw-entry',
  enforce: 'pre',
  // Vite gives a library entry as a path under the root.
  resolveId: (id) => (id.endsWith(SW_ENTRY) ? `\0${SW_ENTRY}` : null),
  load: (id) => (id === `\0${SW_ENTRY}` ? `import ${JSON.stringify(`${root}worker/sw.ts`)}` : null),
}

/** The packages' folders in the repository; the version is the sluice package's (src/version.ts). */
const PACKAGES = { sluice: 'packages/sluice', node: 'packages/node' } as const
const versionFile = join(root, PACKAGES.sluice, 'package.json')

/** src/version.ts imports a package.json for its version: only that goes into the bundles, not the rest of it. */
const versionOnly: Plugin = {
  name: 'sluice:version-only',
  enforce: 'pre',
  load: (id) => (id === versionFile ? JSON.stringify({ version: JSON.parse(readFileSync(id, 'utf8')).version }) : null),
}

type Manifest = { name: string; version: string; dependencies?: Record<string, string> }
const manifest = (dir: string): Manifest => JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'))

/** One version for both packages, and @sluice/node takes its worker files from the sluice of that very version. */
export function checkVersions(): string {
  const sluice = manifest(PACKAGES.sluice)
  const node = manifest(PACKAGES.node)
  const wanted = node.dependencies?.sluice
  if (node.version !== sluice.version || wanted !== sluice.version)
    throw new Error(`${node.name} ${node.version} must depend on sluice ${sluice.version}, its own version, exactly (it says ${wanted})`)
  return sluice.version
}

/** A browser bundle with every dependency inside: the browser loads it as it is, no bundler needed. */
function browserBundle(
  entry: string,
  outDir: string,
  fileName: string,
  format: 'es' | 'iife',
  splitting: boolean,
  plugins: Plugin[] = [],
  sourcemap: false | 'hidden' = false,
): InlineConfig {
  return {
    ...common,
    plugins: [...plugins, versionOnly, secp256k1Wasm({ emitAs: 'secp256k1.wasm' })],
    build: {
      outDir,
      emptyOutDir: false,
      target: 'es2022',
      minify: true,
      sourcemap,
      reportCompressedSize: false,
      lib: { entry, formats: [format], name: 'sluice', fileName: () => fileName },
      // output.minify: Vite's library mode would keep an ES build's whitespace (for bundlers that read its annotations).
      rolldownOptions: { output: { codeSplitting: splitting, chunkFileNames: '[name]-[hash].js', minify: true } },
    },
  }
}

/**
 * `sluice/react`: `react` (the dApp's own, a peer) and `sluice/browser` stay imports, so a page that does not import
 * it has no React, and the hooks use the very node (and startNode's one start) that `sluice/browser` gives.
 */
const REACT_ENTRY = 'worker/react.ts'
const reactExternals: Plugin = {
  name: 'sluice:react-externals',
  enforce: 'pre',
  resolveId: (id, importer) => {
    if (id === 'react' || id.startsWith('react/')) return { id, external: true }
    if (importer?.endsWith(REACT_ENTRY) && id === './browser.ts') return { id: 'sluice/browser', external: true }
    return null
  },
}
const reactBundle = (outDir: string): InlineConfig => browserBundle(REACT_ENTRY, outDir, 'index.js', 'es', false, [reactExternals])

/** `sluice/react` imports nothing but these: anything else would be a second copy of the node's code. */
function checkReactImports(files: WorkerFile[]): void {
  const others = files.flatMap((f) => [...f.imports, ...f.dynamicImports]).filter((i) => i !== 'react' && i !== 'sluice/browser')
  if (others.length > 0 || files.length !== 1)
    throw new Error(`sluice/dist/react/index.js must import only react and sluice/browser; it imports ${others.join(', ')}`)
}

/** The CLI for Node: our sources bundled, every package left as an import (they are @sluice/node's dependencies). */
const cli = (entry: string, outDir: string, fileName: string, splitting: boolean): InlineConfig => ({
  ...common,
  plugins: [versionOnly],
  build: {
    ssr: entry,
    outDir,
    emptyOutDir: false,
    target: 'node22',
    minify: false,
    reportCompressedSize: false,
    rolldownOptions: { output: { entryFileNames: fileName, chunkFileNames: '[name]-[hash].js', codeSplitting: splitting } },
  },
})

/**
 * @sluice/node's Node API (its `"."`, src/headless/index.ts; docs/decisions/0049-node-api.md): bundled as the CLI
 * is, into dist/ beside dist/cli/, with declarations from a tsc run of its own (tsconfig.node.json). They may name
 * viem's and the other dependencies' types: @sluice/node has them as real dependencies.
 */
async function buildNodeApi(nodeDir: string, withDeclarations: boolean): Promise<void> {
  const outDir = join(nodeDir, 'dist')
  const types = withDeclarations ? runTsc('tsconfig.node.json', join(outDir, 'types')) : undefined
  const bundle = cli('src/headless/index.ts', outDir, 'index.js', true)
  // The options take serve's flag table from src/cli/serve.ts, whose command (not bundled here) imports the node's
  // path lazily for a fast --help: here it is imported anyway, as intended.
  bundle.build!.rolldownOptions!.checks = { ineffectiveDynamicImport: false }
  // The entry exports startNode and its errors only; what its lazy chunks share goes into a chunk of its own.
  bundle.build!.rolldownOptions!.preserveEntrySignatures = 'strict'
  await build(bundle)
  if (!types) return
  await types
  writeFileSync(join(outDir, 'index.d.ts'), "export * from './types/src/headless/index.ts'\n")
}

function runTsc(project: string, outDir: string): Promise<void> {
  return new Promise((done, fail) => {
    const tsc = spawn(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, project), '--outDir', outDir], { stdio: 'inherit' })
    tsc.once('error', fail)
    tsc.once('exit', (code) => (code === 0 ? done() : fail(new Error(`tsc -p ${project} exited with ${code}`))))
  })
}

/** The light bin's bundle must run with no package installed: it may import Node's own modules only. */
function checkNodeOnly(files: WorkerFile[], name: string): void {
  const builtins = new Set(builtinModules)
  const others = files.flatMap((f) => [...f.imports, ...f.dynamicImports]).filter((i) => !i.startsWith('node:') && !builtins.has(i))
  if (others.length > 0) throw new Error(`${name} must import nothing but Node's modules; it imports ${others.join(', ')}`)
}

/** The declarations of the page's entries, one .d.ts per source file (tsc, in its own process), into `outDir`. */
function declarations(outDir: string): Promise<void> {
  return new Promise((done, fail) => {
    const args = [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.browser.json'), '--outDir', outDir]
    const tsc = spawn(process.execPath, args, { stdio: 'inherit' })
    tsc.once('error', fail)
    tsc.once('exit', (code) => (code === 0 ? done() : fail(new Error(`tsc (declarations) exited with ${code}`))))
  })
}

export type BuildOptions = {
  /**
   * The folder that holds the packages' folders, `sluice/` and `node/` (default the repository's packages/). Any
   * other (a test's) gets whole packages: each one's package.json and bin/ are copied there beside its dist/.
   */
  packagesDir?: string
  /** The entries' .d.ts files (default true; tsc and their rollup take most of the build's time). */
  declarations?: boolean
  /**
   * A folder for the source maps of the node's worker and its chunks (`<file>.map`; none by default). The bench's
   * trace summaries (bench/traceProfile.ts) read them: the files stay as built without them (no sourceMappingURL
   * comment, nothing more in dist/), so a browser downloads the same bytes.
   */
  sourceMaps?: string
}

/** A built file of the node's worker and the files it imports, statically or with import(). */
export type WorkerFile = { fileName: string; imports: string[]; dynamicImports: string[]; facadeModuleId: string | null }

function outputFiles(result: Awaited<ReturnType<typeof build>>): WorkerFile[] {
  // A library build gives one output per format; this one has one format.
  const [first] = Array.isArray(result) ? result : [result]
  if (!first || !('output' in first)) throw new Error('expected a build output')
  return first.output.map((file) =>
    file.type === 'chunk'
      ? { fileName: file.fileName, imports: file.imports, dynamicImports: file.dynamicImports, facadeModuleId: file.facadeModuleId }
      : { fileName: file.fileName, imports: [], dynamicImports: [], facadeModuleId: null },
  )
}

/** The root's LICENSE and README.md into a package's folder (npm pack takes them from there), if the root has them. */
function copyRootFiles(packageDir: string): void {
  for (const file of ['LICENSE', 'README.md']) if (existsSync(join(root, file))) cpSync(join(root, file), join(packageDir, file))
}

/** Moves `from`'s source maps into `to`, their sources made absolute (they were relative to `from`). */
function moveSourceMaps(from: string, to: string): void {
  mkdirSync(to, { recursive: true })
  for (const file of readdirSync(from).filter((f) => f.endsWith('.map'))) {
    const map = JSON.parse(readFileSync(join(from, file), 'utf8')) as { sources: string[] }
    map.sources = map.sources.map((source) => resolve(from, source))
    writeFileSync(join(to, file), JSON.stringify(map))
    rmSync(join(from, file))
  }
}

/** Builds both packages; resolves to the node worker's files (for `npm run bench`'s sizes). */
export async function buildPackages(options: BuildOptions = {}): Promise<WorkerFile[]> {
  checkVersions()
  const packagesDir = resolve(root, options.packagesDir ?? 'packages')
  const dirs = { sluice: join(packagesDir, 'sluice'), node: join(packagesDir, 'node') }
  for (const [name, dir] of Object.entries(dirs) as [keyof typeof PACKAGES, string][]) {
    rmSync(join(dir, 'dist'), { recursive: true, force: true })
    mkdirSync(dir, { recursive: true })
    if (resolve(dir) !== join(root, PACKAGES[name]))
      for (const file of ['package.json', 'bin']) cpSync(join(root, PACKAGES[name], file), join(dir, file), { recursive: true })
    copyRootFiles(dir)
  }
  writeFileSync(join(dirs.sluice, 'openapi.json'), openApiJson())
  const out = join(dirs.sluice, 'dist')
  // tsc runs in its own process meanwhile, into a folder of its own (only the rolled-up files are the package's),
  // and their rollup as soon as it is done, beside the bundles' builds.
  const typesDir = options.declarations === false ? undefined : mkdtempSync(join(tmpdir(), 'sluice-types-'))
  const types = typesDir && declarations(typesDir).then(() => rollDeclarations(typesDir, out))
  await build(browserBundle('worker/browser.ts', join(out, 'browser'), 'index.js', 'es', false))
  checkReactImports(outputFiles(await build(reactBundle(join(out, 'react')))))
  await build(browserBundle('worker/client.ts', join(out, 'client'), 'index.js', 'es', false))
  await build(browserBundle(SW_ENTRY, out, 'sluice-sw.js', 'iife', false, [swEntry]))
  const workerDir = join(out, 'sluice')
  // The maps are not the worker's files (a browser never loads them).
  const worker = outputFiles(
    await build(browserBundle('worker/node.worker.ts', workerDir, 'node.worker.js', 'es', true, [], options.sourceMaps ? 'hidden' : false)),
  ).filter((file) => !file.fileName.endsWith('.map'))
  if (options.sourceMaps) moveSourceMaps(workerDir, options.sourceMaps)
  checkNodeOnly(outputFiles(await build(cli('src/cli/lightMain.ts', join(out, 'cli'), 'light.js', false))), 'sluice/dist/cli/light.js')
  await build(cli('src/cli/main.ts', join(dirs.node, 'dist/cli'), 'main.js', true))
  await buildNodeApi(dirs.node, options.declarations !== false)
  if (typesDir) {
    try {
      await types
    } finally {
      rmSync(typesDir, { recursive: true, force: true })
    }
  }
  return worker
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'packages-dir': { type: 'string' }, 'no-declarations': { type: 'boolean' } } })
  const started = performance.now()
  await buildPackages({ ...(values['packages-dir'] ? { packagesDir: values['packages-dir'] } : {}), declarations: !values['no-declarations'] })
  const where = values['packages-dir'] ?? 'packages'
  console.log(`built ${where}/sluice/dist/ and ${where}/node/dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}
