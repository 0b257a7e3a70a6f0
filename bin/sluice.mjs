#!/usr/bin/env node
// The `sluice` command. Installed from the package it runs the JavaScript in dist/cli/; in a clone of the
// repository (src/ is there) it runs the TypeScript sources through tsx, so developers need no build step
// (docs/decisions/0016-tsx-runs-the-sources.md).
import { existsSync } from 'node:fs'

// A closed pipe (`sluice chain | head -1`) must not crash a command before it has stopped what it started.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (e) => {
    if (e.code !== 'EPIPE') throw e
  })

const args = process.argv.slice(2)
const fromSources = existsSync(new URL('../src/cli/main.ts', import.meta.url))
let main
if (fromSources) {
  // Every command but init uses viem. Node loads its few hundred files several times faster before tsx's hooks
  // are in the way (about 0.5 s instead of 1.5-2.5 s), so load it first unless only the usage or the version is wanted.
  if (args.length > 0 && args[0] !== 'init' && !['--help', '-h', '--version'].some((a) => args.includes(a)))
    await Promise.all([import('viem'), import('viem/accounts')])
  const { register } = await import('tsx/esm/api')
  register()
  ;({ main } = await import('../src/cli/main.ts'))
} else {
  ;({ main } = await import('../dist/cli/main.js'))
}
// exit() rather than exitCode: a command is done when main resolves, even if a socket still holds the loop.
process.exit(await main(args))
