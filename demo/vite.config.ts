// The demo page, built as any dApp builds a page that embeds Sluice: `sluice/browser` imported by name (the sluice
// package's export from packages/sluice/dist/, which the workspace links as node_modules/sluice), and
// `sluice init demo/public` for what must be served from the origin. `sluice/react`'s hooks run on Preact here, as
// on any Preact app: `react` is preact/compat.
import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

const root = fileURLToPath(new URL('.', import.meta.url))

export default defineConfig({
  root,
  publicDir: 'public',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
})
