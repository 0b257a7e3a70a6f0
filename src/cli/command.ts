/** A `sluice <name>` subcommand. `run` resolves to the process exit code. */
export type Command = {
  name: string
  usage: string
  run(argv: readonly string[]): Promise<number>
}
