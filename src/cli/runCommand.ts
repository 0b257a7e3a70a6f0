import { CliError, UsageError } from './cliError.ts'
import type { Command } from './command.ts'

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
 * Runs `sluice <name> <rest>` and resolves to its exit code: a CliError is one line on stderr and its exit code
 * (with a pointer to the usage for a UsageError), anything else is unexpected and exits 1.
 */
export async function runCommand(name: string, load: () => Promise<Command>, rest: readonly string[]): Promise<number> {
  try {
    return await (await load()).run(rest)
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
