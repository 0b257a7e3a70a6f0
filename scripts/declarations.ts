// The sluice package's declarations, one file per entry (docs/decisions/0048-self-contained-declarations.md): tsc's
// .d.ts of the sources, rolled up by rollup-plugin-dts into what each entry exports and what that names. A dApp then
// type-checks with `sluice` alone (and react for sluice/react), skipLibCheck or not.
import { join } from 'node:path'
import { type Plugin, type RollupCache, rollup } from 'rollup'
import { dts } from 'rollup-plugin-dts'

/** Each entry's declarations, and the only modules they may import: sluice/react's, like its bundle's. */
export const DECLARATION_ENTRIES = {
  browser: [],
  react: ['react', 'sluice/browser'],
  client: [],
} as const satisfies Record<string, readonly string[]>

type Entry = keyof typeof DECLARATION_ENTRIES

/**
 * Packages stay imports (the check below then refuses them but react). sluice/react's import of the page module is
 * `sluice/browser`, as in its bundle (build.ts): the hooks take the types of the one sluice/browser, not copies.
 */
const externals = (entry: Entry): Plugin => ({
  name: 'sluice:declaration-externals',
  resolveId(id, importer) {
    if (entry === 'react' && importer?.endsWith('/worker/react.d.ts') && id === './browser.ts') return { id: 'sluice/browser', external: true }
    if (!id.startsWith('.') && !id.startsWith('/')) return { id, external: true }
    return null
  },
})

/**
 * Rolls `<typesDir>/worker/<entry>.d.ts` (tsc's output, mirroring the sources) into `<outDir>/<entry>/index.d.ts`
 * for each entry; fails if one imports a module it may not (a type of viem or idb reached from the entry).
 */
export async function rollDeclarations(typesDir: string, outDir: string): Promise<void> {
  // One after the other, each reusing the files the ones before parsed (most are common to browser and client).
  let cache: RollupCache | undefined
  for (const entry of Object.keys(DECLARATION_ENTRIES) as Entry[]) {
    const input = join(typesDir, 'worker', `${entry}.d.ts`)
    const bundle = await rollup({ input, plugins: [externals(entry), dts()], logLevel: 'warn', ...(cache ? { cache } : {}) })
    try {
      const { output } = await bundle.write({ file: join(outDir, entry, 'index.d.ts'), format: 'es' })
      const allowed: readonly string[] = DECLARATION_ENTRIES[entry]
      const others = output.flatMap((file) => (file.type === 'chunk' ? file.imports : [])).filter((i) => !allowed.includes(i))
      if (others.length > 0 || output.length !== 1)
        throw new Error(`sluice/dist/${entry}/index.d.ts must be one file importing ${allowed.join(' and ') || 'no module'}; it imports ${others.join(', ')}`)
      cache = bundle.cache
    } finally {
      await bundle.close()
    }
  }
}
