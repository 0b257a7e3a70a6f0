#!/usr/bin/env node
// Runs Biome's binary from its platform package. The project depends on `@biomejs/cli-linux-x64` itself rather than
// the `@biomejs/biome` wrapper: the registry reachable here has only this platform's package, so the wrapper's
// optional ones drop out of the lock file and `npm ci` refuses it (the same reason anvil is taken this way).
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'

const binary = createRequire(import.meta.url).resolve('@biomejs/cli-linux-x64/biome')
const { status, error } = spawnSync(binary, process.argv.slice(2), { stdio: 'inherit' })
if (error) {
  console.error(`biome: ${error.message}`)
  process.exit(1)
}
process.exit(status ?? 1)
