import { defineConfig } from 'vite'
import { secp256k1Wasm } from './scripts/viteSecp256k1Wasm.ts'

// The demo page and the worker/service-worker bundles (issue: demo) build from here.
export default defineConfig({
  plugins: [secp256k1Wasm()],
  worker: { format: 'es', plugins: () => [secp256k1Wasm()] },
  optimizeDeps: { exclude: ['tiny-secp256k1'] },
  build: { target: 'es2022' },
})
