import { parseArgs } from 'node:util'
import { version } from '../version.ts'
import { UsageError } from './cliError.ts'

/**
 * One `--flag <VALUE>` of a command. `parse` returns undefined for a value it rejects; `expected` then says
 * what it wanted. `HasDefault` records in the type whether a default fills the flag in when it is absent.
 */
export type FlagSpec<T = unknown, HasDefault extends boolean = boolean> = {
  description: string
  valueName: string
  expected: string
  parse(raw: string): T | undefined
  default: HasDefault extends true ? T : undefined
  /** A switch: `--flag` alone means true (`--flag=false` is allowed); it never takes the next argument. */
  switch?: true
  /** May be given more than once: `parse` gets the values joined with commas (`--relay a --relay b` is `a,b`). */
  repeatable?: true
  /**
   * Takes two values, as Raiden's `--flat-fee TOKEN AMOUNT`: the argument after the value is the second one, and
   * `parse` gets them joined with a space (`valueName` names both, space-separated).
   */
  pair?: true
  /** Other names of the flag, such as Raiden's (`--eth-rpc-endpoint` for `--rpc`); giving two of them is REPEATED_FLAG. */
  aliases?: readonly `--${string}`[]
}

export type FlagSpecs = Record<string, FlagSpec>

/** The parsed values, keyed like the specs: defaulted flags are always there, others may be undefined. */
export type ParsedFlags<specs extends FlagSpecs> = {
  [K in keyof specs]: specs[K] extends FlagSpec<infer T, true> ? T : specs[K] extends FlagSpec<infer T, false> ? T | undefined : never
}

/** `asked`: the command line asks for the usage (`--help`, `-h`) or the version (`--version`), not for a run. */
export type ParseFlagsReturnType<specs extends FlagSpecs> = { asked: 'help' | 'version' } | { asked: undefined; values: ParsedFlags<specs> }

export class UnknownFlagError extends UsageError {
  override name = 'UnknownFlagError' as const
  override readonly code = 'UNKNOWN_FLAG' as const
  constructor(readonly flag: string) {
    super(`unknown flag ${flag}`)
  }
}

export class MissingFlagValueError extends UsageError {
  override name = 'MissingFlagValueError' as const
  override readonly code = 'MISSING_FLAG_VALUE' as const
  constructor(
    readonly flag: string,
    valueName: string,
  ) {
    super(`${flag} needs a value: ${flag} <${valueName}>`)
  }
}

export class InvalidFlagValueError extends UsageError {
  override name = 'InvalidFlagValueError' as const
  override readonly code = 'INVALID_FLAG_VALUE' as const
  constructor(
    readonly flag: string,
    readonly value: string,
    readonly expected: string,
  ) {
    super(`${flag} must be ${expected}, got ${JSON.stringify(value)}`)
  }
}

export class RepeatedFlagError extends UsageError {
  override name = 'RepeatedFlagError' as const
  override readonly code = 'REPEATED_FLAG' as const
  /** `earlier` is the name the flag was first given as, when that was another of its names (an alias). */
  constructor(
    readonly flag: string,
    readonly earlier?: string,
  ) {
    super(`${flag} is given more than once${earlier && earlier !== flag ? ` (${earlier} is the same flag)` : ''}`)
  }
}

export class UnexpectedArgumentError extends UsageError {
  override name = 'UnexpectedArgumentError' as const
  override readonly code = 'UNEXPECTED_ARGUMENT' as const
  constructor(readonly argument: string) {
    super(`unexpected argument ${JSON.stringify(argument)}`)
  }
}

export type ParseFlagsErrorType = UnknownFlagError | MissingFlagValueError | InvalidFlagValueError | RepeatedFlagError | UnexpectedArgumentError

/** `blockTime` -> `--block-time`. */
export function flagName(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`
}

/** Every name of a flag: ours first, then its aliases. */
function namesOf(key: string, spec: FlagSpec): string[] {
  return [flagName(key), ...(spec.aliases ?? [])]
}

/**
 * Parses `--name value` and `--name=value` pairs against `specs` (keys in camelCase, flags in kebab-case, plus each
 * spec's aliases). `--help` or `-h` anywhere asks for help, else `--version` anywhere asks for the version. A value
 * may start with a single dash (`--port -1` is a bad port, not a missing one); a following `--flag` means the value
 * is missing.
 *
 * node:util parseArgs splits the arguments into tokens; it runs with `strict: false` because its strict checks
 * refuse what we accept (`--port -1` is "ambiguous" to it, `--switch=false` takes no value) and name the flag only
 * in prose. So none of its ERR_PARSE_ARGS_* errors is thrown: the tokens are checked here, with our errors.
 */
export function parseFlags<const specs extends FlagSpecs>(argv: readonly string[], specs: specs): ParseFlagsReturnType<specs> {
  // Before parsing: `--port --help` asks for help, though parseArgs would take --help as the port.
  if (argv.some((a) => a === '--help' || a === '-h')) return { asked: 'help' }
  if (argv.includes('--version')) return { asked: 'version' }
  const byName = new Map(Object.entries(specs).flatMap(([key, spec]) => namesOf(key, spec).map((name) => [name, key] as const)))
  const options = Object.fromEntries([...byName].map(([name, key]) => [name.slice(2), { type: specs[key]!.switch ? 'boolean' : 'string' } as const]))
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true })
  const raw = new Map<string, { name: string; value: string }>()
  // The arguments a pair flag took as its second value: parseArgs sees them as positionals (or options, if they start
  // with a dash), which they are not.
  const taken = new Set<number>()
  for (const token of tokens) {
    if (taken.has(token.index)) continue
    if (token.kind === 'positional') throw new UnexpectedArgumentError(token.value)
    if (token.kind === 'option-terminator') throw new UnexpectedArgumentError('--')
    // The flag as typed: parseArgs splits `-abc` into -a, -b and -c, which the user did not write.
    const name = argv[token.index]!.split('=', 1)[0]!
    const key = byName.get(name)
    if (key === undefined) throw new UnknownFlagError(name)
    const spec = specs[key]!
    let value = token.value
    if (value === undefined && spec.switch) value = 'true'
    // A string option takes the next argument whatever it is: one that is itself a --flag means the value is missing.
    else if (value !== undefined && !token.inlineValue && value.startsWith('--')) value = undefined
    if (value === undefined || value === '') throw new MissingFlagValueError(name, spec.valueName)
    if (spec.pair) {
      const at = token.index + (token.inlineValue ? 1 : 2)
      const second = argv[at]
      if (second === undefined || second === '' || second.startsWith('--')) throw new MissingFlagValueError(name, spec.valueName)
      taken.add(at)
      value = `${value} ${second}`
    }
    const earlier = raw.get(key)
    if (earlier !== undefined && !spec.repeatable) throw new RepeatedFlagError(name, earlier.name)
    raw.set(key, { name: earlier?.name ?? name, value: earlier === undefined ? value : `${earlier.value},${value}` })
  }
  const values: Record<string, unknown> = {}
  for (const [key, spec] of Object.entries(specs)) {
    const given = raw.get(key)
    if (given === undefined) {
      values[key] = spec.default
      continue
    }
    const value = spec.parse(given.value)
    // The error names the flag as it was given, alias or not.
    if (value === undefined) throw new InvalidFlagValueError(given.name, given.value, spec.expected)
    values[key] = value
  }
  return { asked: undefined, values: values as ParsedFlags<specs> }
}

/** Answers `--help` with the command's usage, `--version` with the version, on stdout; returns the exit code, 0. */
export function answerAsked(asked: 'help' | 'version', usage: string): number {
  console.log(asked === 'help' ? usage : version)
  return 0
}

/** The flags part of a command's usage, one aligned line per flag. */
export function formatFlags(specs: FlagSpecs): string {
  const heads = Object.entries(specs).map(([key, spec]) => {
    const names = namesOf(key, spec).join(', ')
    if (spec.switch) return names
    return `${names} ${
      spec.pair
        ? spec.valueName
            .split(' ')
            .map((v) => `<${v}>`)
            .join(' ')
        : `<${spec.valueName}>`
    }`
  })
  const width = Math.max(...heads.map((h) => h.length))
  return Object.values(specs)
    .map((spec, i) => {
      const shown = spec.default === undefined || spec.switch ? '' : ` (default: ${String(spec.default)})`
      return `  ${heads[i]!.padEnd(width)}  ${spec.description}${shown}`
    })
    .join('\n')
}

type FlagOptions<T> = { description: string; valueName?: string; default?: T; aliases?: FlagSpec['aliases'] }

function flag<T>(options: FlagOptions<T>, valueName: string, expected: string, parse: (raw: string) => T | undefined): FlagSpec<T> {
  const { description, aliases } = options
  return { description, valueName: options.valueName ?? valueName, expected, parse, default: options.default as never, ...(aliases ? { aliases } : {}) }
}

/** A whole number in [min, max], written in decimal digits only. */
export function integerFlag(options: FlagOptions<number> & { min: number; max: number; default: number }): FlagSpec<number, true>
export function integerFlag(options: FlagOptions<number> & { min: number; max: number }): FlagSpec<number, false>
export function integerFlag({ min, max, ...options }: FlagOptions<number> & { min: number; max: number }): FlagSpec<number> {
  const expected = max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`
  return flag(options, 'N', expected, (raw) => {
    if (!/^\d+$/.test(raw)) return undefined
    const n = Number(raw)
    return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined
  })
}

/** A number above zero, with or without decimals (`2`, `0.5`). */
export function positiveNumberFlag(options: FlagOptions<number> & { default: number }): FlagSpec<number, true>
export function positiveNumberFlag(options: FlagOptions<number>): FlagSpec<number, false>
export function positiveNumberFlag(options: FlagOptions<number>): FlagSpec<number> {
  return flag(options, 'N', 'a positive number', (raw) => {
    if (!/^(\d+\.?\d*|\.\d+)$/.test(raw)) return undefined
    const n = Number(raw)
    return Number.isFinite(n) && n > 0 ? n : undefined
  })
}

/** An amount in gwei above zero, up to 9 decimals (`50`, `1.5`), as wei. */
export function gweiFlag(options: FlagOptions<bigint>): FlagSpec<bigint, false> {
  return flag(options, 'GWEI', 'a positive number of gwei, e.g. 2 or 0.5', (raw) => {
    if (!/^(\d+(\.\d{1,9})?|\.\d{1,9})$/.test(raw)) return undefined
    // Not viem's parseGwei: init (this module's other user) is bundled with nothing but Node's modules (0042).
    const [whole = '', fraction = ''] = raw.split('.')
    const wei = BigInt(whole || '0') * 10n ** 9n + BigInt(fraction.padEnd(9, '0'))
    return wei > 0n && wei < 2n ** 256n ? wei : undefined
  }) as FlagSpec<bigint, false>
}

/**
 * The cap on fees per gas of every transaction the process sends (`sluice serve`, `monitor`, `deploy`): never exceeded
 * (docs/decisions/0054). Raiden's `--gas-price` (a strategy or a fixed legacy price) is not an alias: a fixed price is
 * what left transactions unmined through a fee spike.
 */
export const maxFeePerGasFlag = gweiFlag({
  description:
    'the most to offer per gas, in gwei (maxFeePerGas; the gas price on a chain without a base fee): never exceeded; a transaction with a deadline that needs more raises the critical notification transaction_at_risk in time (default: no cap)',
})

/** Any non-empty text. */
export function stringFlag(options: FlagOptions<string> & { default: string }): FlagSpec<string, true>
export function stringFlag(options: FlagOptions<string>): FlagSpec<string, false>
export function stringFlag(options: FlagOptions<string>): FlagSpec<string> {
  return flag(options, 'TEXT', 'non-empty text', (raw) => raw)
}

/** A switch, off unless given: `--json`. */
export function switchFlag(options: { description: string }): FlagSpec<boolean, true> {
  return {
    description: options.description,
    valueName: '',
    expected: 'true or false',
    parse: (raw) => (raw === 'true' ? true : raw === 'false' ? false : undefined),
    default: false,
    switch: true,
  }
}
