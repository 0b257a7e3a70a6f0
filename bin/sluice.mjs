#!/usr/bin/env node
// The `sluice` command in a clone of the repository: it runs the TypeScript sources through tsx, so developers need
// no build step (docs/decisions/0016-tsx-runs-the-sources.md). The packages' bins (packages/*/bin/sluice.mjs), which
// npm links into node_modules/.bin, come here when they sit in the clone; installed, they run their dist/
// (docs/decisions/0042-two-packages-sluice-and-sluice-node.md).

// A closed pipe (`sluice chain | head -1`) must not crash a command before it has stopped what it started.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (e) => {
    if (e.code !== 'EPIPE') throw e
  })

const args = process.argv.slice(2)
// Every command but init uses viem. Node loads its few hundred files several times faster before tsx's hooks
// are in the way (about 0.5 s instead of 1.5-2.5 s), so load it first unless only the usage or the version is wanted.
if (args.length > 0 && args[0] !== 'init' && !['--help', '-h', '--version'].some((a) => args.includes(a)))
  await Promise.all([import('viem'), import('viem/accounts')])
const { register } = await import('tsx/esm/api')
register()
const { main } = await import('../src/cli/main.ts')
// exit() rather than exitCode: a command is done when main resolves, even if a socket still holds the loop.
process.exit(await main(args))
