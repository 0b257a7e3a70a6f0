#!/usr/bin/env node
// The `sluice` package's command (docs/decisions/0042-two-packages-sluice-and-sluice-node.md): with @sluice/node
// installed beside it, the whole command line from that package, for every command, because npm links only one of
// two bins of the same name; without it, `init` (dist/cli/light.js, which needs no dependency) and exit code 2
// for the node's commands. In a clone of the repository it runs the sources, through the repository's bin/sluice.mjs.
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
  let full
  try {
    // Resolving only: whether the package is there. Loading it is not caught, so a broken install shows its error.
    import.meta.resolve('@sluice/node/cli')
    full = async () => (await import('@sluice/node/cli')).main
  } catch {}
  const { lightMain } = await import('../dist/cli/light.js')
  process.exit(await lightMain(process.argv.slice(2), full))
}
