import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Plugin } from 'vite'

const LOADER = '\0tiny-secp256k1-wasm-loader'

export type Secp256k1WasmOptions = {
  /**
   * For the package build: emit the WASM as this file beside the chunks and fetch it relative to the chunk
   * (`new URL('./<file>', import.meta.url)`), so it loads wherever the built worker is served from. Without it
   * (dev server, tests), Vite serves the file through its `?url` import.
   */
  emitAs?: string
}

/**
 * Lets tiny-secp256k1 (libsecp256k1 in WASM) load in the browser: its browser build imports the .wasm file as an
 * ES module, which Vite does not do, so this swaps in a loader that fetches and instantiates it (top-level await,
 * fine in module workers and pages). Without it the node falls back to the slower pure-JS engine.
 */
export function secp256k1Wasm(options: Secp256k1WasmOptions = {}): Plugin {
  let libDir = ''
  return {
    name: 'sluice:secp256k1-wasm',
    enforce: 'pre',
    resolveId(source, importer) {
      if (source === './wasm_loader.js' && importer && /tiny-secp256k1[\\/]lib[\\/]index\.js$/.test(importer.split('?')[0]!)) {
        libDir = dirname(importer.split('?')[0]!)
        return LOADER
      }
      return null
    },
    load(id) {
      if (id !== LOADER) return null
      const wasmUrl = options.emitAs
        ? // Built from parts so that no bundler takes the URL for an asset of its own to rename or inline.
          `const wasmUrl = new URL(['.', ${JSON.stringify(options.emitAs)}].join('/'), import.meta.url)`
        : `import wasmUrl from ${JSON.stringify(`${join(libDir, 'secp256k1.wasm')}?url`)}`
      if (options.emitAs) this.emitFile({ type: 'asset', fileName: options.emitAs, source: readFileSync(join(libDir, 'secp256k1.wasm')) })
      return [
        wasmUrl,
        `import * as rand from ${JSON.stringify(join(libDir, 'rand.browser.js'))}`,
        `import * as validate_error from ${JSON.stringify(join(libDir, 'validate_error.js'))}`,
        `const imports = { './rand.js': rand, './validate_error.js': validate_error }`,
        // Not instantiateStreaming: it refuses a static host that serves .wasm without the application/wasm type.
        `const response = await fetch(wasmUrl)`,
        `if (!response.ok) throw new Error('secp256k1.wasm: ' + response.status)`,
        `const { instance } = await WebAssembly.instantiate(await response.arrayBuffer(), imports)`,
        `export default instance.exports`,
      ].join('\n')
    },
  }
}
