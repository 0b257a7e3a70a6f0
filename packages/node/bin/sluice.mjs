#!/usr/bin/env node
// @sluice/node's `sluice` command: the whole command line, dist/cli/main.js. In a clone of the repository (npm
// links this bin into node_modules/.bin) it runs the sources instead, through the repository's bin/sluice.mjs.
// The `sluice` package's bin has the same name and, with this package installed, runs this same command line
// (docs/decisions/0042-two-packages-sluice-and-sluice-node.md).
import { readFileSync } from 'node:fs'

/** Whether this package sits in a clone of the repository (packages/<name>/ of the workspace named sluice-workspace). */
function inRepository() {
  try {
    return JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).name === 'sluice-workspace'
  } catch {
    return false
  }
}

if (inRepository()) {
  await import(new URL('../../../bin/sluice.mjs', import.meta.url).href)
} else {
  // A closed pipe (`sluice chain | head -1`) must not crash a command before it has stopped what it started.
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (e) => {
      if (e.code !== 'EPIPE') throw e
    })
  const { main } = await import('../dist/cli/main.js')
  // exit() rather than exitCode: a command is done when main resolves, even if a socket still holds the loop.
  process.exit(await main(process.argv.slice(2)))
}
