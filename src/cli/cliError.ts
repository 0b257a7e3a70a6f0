import { SluiceError } from '../errors.ts'
/**
 * An error the command line reports as one line on stderr, exiting with `exitCode`, without a stack trace.
 * Anything else that escapes a command is a bug and is printed in full (exit code 1).
 */
export class CliError extends SluiceError {
  override name: string = 'CliError'
  override readonly code: string = 'CLI'
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message)
  }
}

/** The command line was wrong (an unknown flag, a bad value, an unknown command): exit code 2. */
export class UsageError extends CliError {
  override name: string = 'UsageError'
  override readonly code: string = 'USAGE'
  constructor(message: string) {
    super(message, 2)
  }
}
