import { dirname, join } from 'node:path'
import type { Plugin } from 'vite'

const LOADER = '\0tiny-secp256k1-wasm-loader'

/**
 * Lets tiny-secp256k1 (libsecp256k1 in WASM) load in the browser: its browser build imports the .wasm file as an
 * ES module, which Vite does not do, so this swaps in a loader that fetches and instantiates it (top-level await,
 * fine in module workers and pages). Without it the node falls back to the slower pure-JS engine.
 */
export function secp256k1Wasm(): Plugin {
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
      return [
        `import wasmUrl from ${JSON.stringify(`${join(libDir, 'secp256k1.wasm')}?url`)}`,
        `import * as rand from ${JSON.stringify(join(libDir, 'rand.browser.js'))}`,
        `import * as validate_error from ${JSON.stringify(join(libDir, 'validate_error.js'))}`,
        `const imports = { './rand.js': rand, './validate_error.js': validate_error }`,
        `const { instance } = await WebAssembly.instantiateStreaming(fetch(wasmUrl), imports)`,
        `export default instance.exports`,
      ].join('\n')
    },
  }
}
