import { version } from '../version.ts'
import { CliError } from './cliError.ts'
import { isCommandName, usageOf } from './commandList.ts'
import { initCommand } from './init.ts'
import { runCommand, UnknownCommandError } from './runCommand.ts'

/** The full command line (`main` of src/cli/main.ts), as @sluice/node exports it. */
export type FullMain = (argv: readonly string[]) => Promise<number>

/** A command of the headless node asked of the `sluice` package alone: exit code 2, saying what to install. */
export class NodePackageMissingError extends CliError {
  override name = 'NodePackageMissingError' as const
  override readonly code = 'NODE_PACKAGE_MISSING' as const
  constructor(readonly command: string) {
    super(`this command runs the headless node, which the sluice package does not include: npm install @sluice/node`, 2)
  }
}

export const lightUsage = usageOf(
  ['init'],
  '\nThe other commands (serve, devnet, relay, chain, deploy, monitor, pathfinding, backup-server) come with the headless node: npm install @sluice/node\n',
)

/**
 * The `sluice` package's bin (docs/decisions/0042-two-packages-sluice-and-sluice-node.md): with @sluice/node
 * installed beside it, the full command line for every command, so that whichever of the two bins npm linked
 * behaves the same; without it, `init`, the usage and the version, and exit code 2 for any other command.
 */
export async function lightMain(argv: readonly string[], full?: () => Promise<FullMain>): Promise<number> {
  if (full) return (await full())(argv)
  const [name, ...rest] = argv
  if (name === '--help' || name === '-h') {
    console.log(lightUsage)
    return 0
  }
  if (name === '--version') {
    console.log(version)
    return 0
  }
  if (name === 'init') return runCommand(name, async () => initCommand, rest)
  if (name !== undefined && isCommandName(name)) {
    console.error(`sluice ${name}: ${new NodePackageMissingError(name).message}`)
    return 2
  }
  if (name !== undefined) console.error(`sluice: ${new UnknownCommandError(name).message}`)
  console.error(lightUsage)
  return 2
}
