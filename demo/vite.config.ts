// The demo page, built as any dApp builds a page that embeds Sluice: `sluice/browser` imported by name (the sluice
// package's export from packages/sluice/dist/, which the workspace links as node_modules/sluice), and
// `sluice init demo/public` for what must be served from the origin.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const root = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  root,
  publicDir: 'public',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
})
