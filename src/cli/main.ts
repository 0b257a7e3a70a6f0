import { version } from '../version.ts'
import type { Command } from './command.ts'
import { type CommandName, isCommandName, usageOf } from './commandList.ts'
import { runCommand, UnknownCommandError } from './runCommand.ts'

export { UnknownCommandError } from './runCommand.ts'

/** Every subcommand, loaded only when run, so `sluice --help` and each command start fast. */
const commands: Record<CommandName, () => Promise<Command>> = {
  chain: async () => (await import('./chain.ts')).chainCommand,
  deploy: async () => (await import('./deploy.ts')).deployCommand,
  serve: async () => (await import('./serve.ts')).serveCommand,
  devnet: async () => (await import('./devnet.ts')).devnetCommand,
  monitor: async () => (await import('./monitor.ts')).monitorCommand,
  pathfinding: async () => (await import('./pathfinding.ts')).pathfindingCommand,
  relay: async () => (await import('./relay.ts')).relayCommand,
  'backup-server': async () => (await import('./backupServer.ts')).backupServerCommand,
  init: async () => (await import('./init.ts')).initCommand,
}

export const usage = usageOf(Object.keys(commands) as CommandName[])

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
  if (name === undefined || !isCommandName(name)) {
    if (name !== undefined) console.error(`sluice: ${new UnknownCommandError(name).message}`)
    console.error(usage)
    return 2
  }
  return runCommand(name, commands[name], rest)
}
