#!/usr/bin/env node
// The `sluice` command. It runs the TypeScript sources directly: tsx compiles them as Node loads them.
import { register } from 'tsx/esm/api'

// A closed pipe (`sluice chain | head -1`) must not crash a command before it has stopped what it started.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (e) => {
    if (e.code !== 'EPIPE') throw e
  })

const args = process.argv.slice(2)
// Every command uses viem. Node loads its few hundred files several times faster before tsx's hooks are in
// the way (about 0.5 s instead of 1.5-2.5 s), so load it first unless only the usage is wanted.
if (args.length > 0 && !args.includes('--help') && !args.includes('-h')) await Promise.all([import('viem'), import('viem/accounts')])
register()
const { main } = await import('../src/cli/main.ts')
// exit() rather than exitCode: a command is done when main resolves, even if a socket still holds the loop.
process.exit(await main(args))
