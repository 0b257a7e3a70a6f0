import { version } from '../version.ts'
import { CliError, UsageError } from './cliError.ts'
import type { Command } from './command.ts'

/** Every subcommand, loaded only when run, so `sluice --help` and each command start fast. */
const commands: Record<string, { summary: string; load(): Promise<Command> }> = {
  chain: {
    summary: 'start a local anvil chain with the contracts deployed',
    load: async () => (await import('./chain.ts')).chainCommand,
  },
  serve: {
    summary: 'run one node and serve its REST API over HTTP',
    load: async () => (await import('./serve.ts')).serveCommand,
  },
  devnet: {
    summary: 'anvil, contracts, tokens and N funded nodes with their REST APIs, in one process',
    load: async () => (await import('./devnet.ts')).devnetCommand,
  },
  monitor: {
    summary: "run a monitoring service that guards nodes' channels while they are offline",
    load: async () => (await import('./monitor.ts')).monitorCommand,
  },
  relay: {
    summary: 'run a libp2p relay (circuit relay and presence hub) for nodes to meet',
    load: async () => (await import('./relay.ts')).relayCommand,
  },
  'backup-server': {
    summary: "keep nodes' sealed backup copies off the browser (newest per address)",
    load: async () => (await import('./backupServer.ts')).backupServerCommand,
  },
  init: {
    summary: "copy the service worker and the node's worker into the folder a dApp serves",
    load: async () => (await import('./init.ts')).initCommand,
  },
}

export const usage = `Usage: sluice <command> [flags]

Commands:
${Object.entries(commands)
  .map(([name, c], _, all) => `  ${name.padEnd(Math.max(...all.map(([n]) => n.length)) + 2)}${c.summary}`)
  .join('\n')}

Run \`sluice <command> --help\` for the flags of a command, \`sluice --version\` for the version.`

export class UnknownCommandError extends UsageError {
  override name = 'UnknownCommandError' as const
  override readonly code = 'UNKNOWN_COMMAND' as const
  constructor(readonly command: string) {
    super(`unknown command ${JSON.stringify(command)}`)
  }
}

/**
 * A bug or a failure we did not foresee: the error and its causes, one line each. viem's own messages carry
 * whole requests (kilobytes of bytecode), so only their short message is shown; SLUICE_DEBUG=1 prints it all.
 */
function describeUnexpected(error: unknown): string {
  if (process.env.SLUICE_DEBUG) return `unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`
  const lines: string[] = []
  for (let e: unknown = error; e != null && lines.length < 5; e = (e as { cause?: unknown }).cause) {
    if (!(e instanceof Error)) {
      lines.push(String(e))
      break
    }
    const short = (e as { shortMessage?: string }).shortMessage ?? e.message.split('\n')[0]
    lines.push(`${e.name}: ${short}`)
  }
  return `unexpected error: ${lines.join('\n  caused by ')}\n(run with SLUICE_DEBUG=1 for the full error)`
}

/**
 * Runs `sluice <argv>` and resolves to the exit code: 0 when done, 2 for a wrong command line (one line on
 * stderr, usage for a missing or unknown command), 1 for anything unexpected.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === '--help' || name === '-h') {
    console.log(usage)
    return 0
  }
  if (name === '--version') {
    console.log(version)
    return 0
  }
  const entry = name === undefined ? undefined : Object.hasOwn(commands, name) ? commands[name] : undefined
  if (name === undefined || entry === undefined) {
    if (name !== undefined) console.error(`sluice: ${new UnknownCommandError(name).message}`)
    console.error(usage)
    return 2
  }
  try {
    return await (await entry.load()).run(rest)
  } catch (e) {
    if (e instanceof CliError) {
      const hint = e instanceof UsageError ? ` (see sluice ${name} --help)` : ''
      console.error(`sluice ${name}: ${e.message}${hint}`)
      return e.exitCode
    }
    console.error(`sluice ${name}: ${describeUnexpected(e)}`)
    return 1
  }
}
