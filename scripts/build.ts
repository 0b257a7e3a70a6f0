// `npm run build`: the package's dist/ (README, Embed Sluice in your dApp; docs/decisions/0016-tsx-runs-the-sources.md)
//   dist/browser/index.js, index.d.ts  the page's module (`sluice/browser`), self-contained, with its declarations
//   dist/sluice-sw.js                  the service worker, one classic script
//   dist/sluice/                       the node's module worker, its chunks (libp2p in its own) and secp256k1.wasm
//   dist/cli/                          the `sluice` command as JavaScript for Node (dependencies stay imports)
import { spawn } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { build, type InlineConfig, type Plugin } from 'vite'
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

/** src/version.ts imports package.json for its version: only that goes into the bundles, not the dependency lists. */
const versionOnly: Plugin = {
  name: 'sluice:version-only',
  enforce: 'pre',
  load: (id) => (id === join(root, 'package.json') ? JSON.stringify({ version: JSON.parse(readFileSync(id, 'utf8')).version }) : null),
}

/** A browser bundle with every dependency inside: the browser loads it as it is, no bundler needed. */
function browserBundle(entry: string, outDir: string, fileName: string, format: 'es' | 'iife', splitting: boolean, plugins: Plugin[] = []): InlineConfig {
  return {
    ...common,
    plugins: [...plugins, versionOnly, secp256k1Wasm({ emitAs: 'secp256k1.wasm' })],
    build: {
      outDir,
      emptyOutDir: false,
      target: 'es2022',
      minify: true,
      reportCompressedSize: false,
      lib: { entry, formats: [format], name: 'sluice', fileName: () => fileName },
      // output.minify: Vite's library mode would keep an ES build's whitespace (for bundlers that read its annotations).
      rolldownOptions: { output: { codeSplitting: splitting, chunkFileNames: '[name]-[hash].js', minify: true } },
    },
  }
}

/** The CLI for Node: our sources bundled, every package left as an import (they are the package's dependencies). */
const cli = (outDir: string): InlineConfig => ({
  ...common,
  plugins: [versionOnly],
  build: {
    ssr: 'src/cli/main.ts',
    outDir,
    emptyOutDir: false,
    target: 'node20',
    minify: false,
    reportCompressedSize: false,
    rolldownOptions: { output: { entryFileNames: 'main.js', chunkFileNames: '[name]-[hash].js' } },
  },
})

/** The page module's declarations (tsc, one file per source file, under browser/types/). */
function declarations(outDir: string): Promise<void> {
  return new Promise((done, fail) => {
    const args = [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.browser.json'), '--outDir', outDir]
    const tsc = spawn(process.execPath, args, { stdio: 'inherit' })
    tsc.once('error', fail)
    tsc.once('exit', (code) => (code === 0 ? done() : fail(new Error(`tsc (declarations) exited with ${code}`))))
  })
}

export type BuildOptions = {
  /** Where to write (default dist/ of the repository); tests build into a folder of their own. */
  outDir?: string
  /** The page module's .d.ts files (default true; tsc takes most of the build's time). */
  declarations?: boolean
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

/** Builds the package; resolves to the node worker's files (for `npm run bench`'s sizes). */
export async function buildPackage(options: BuildOptions = {}): Promise<WorkerFile[]> {
  const out = resolve(root, options.outDir ?? 'dist')
  rmSync(out, { recursive: true, force: true })
  // tsc runs in its own process meanwhile.
  const types = options.declarations === false ? undefined : declarations(join(out, 'browser/types'))
  await build(browserBundle('worker/browser.ts', join(out, 'browser'), 'index.js', 'es', false))
  await build(browserBundle(SW_ENTRY, out, 'sluice-sw.js', 'iife', false, [swEntry]))
  const worker = outputFiles(await build(browserBundle('worker/node.worker.ts', join(out, 'sluice'), 'node.worker.js', 'es', true)))
  await build(cli(join(out, 'cli')))
  if (types) {
    await types
    writeFileSync(join(out, 'browser/index.d.ts'), "export * from './types/worker/browser.ts'\n")
  }
  return worker
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'out-dir': { type: 'string' }, 'no-declarations': { type: 'boolean' } } })
  const started = performance.now()
  await buildPackage({ ...(values['out-dir'] ? { outDir: values['out-dir'] } : {}), declarations: !values['no-declarations'] })
  console.log(`built ${values['out-dir'] ?? 'dist'}/ in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}
