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
}

export type FlagSpecs = Record<string, FlagSpec>

/** The parsed values, keyed like the specs: defaulted flags are always there, others may be undefined. */
export type ParsedFlags<specs extends FlagSpecs> = {
  [K in keyof specs]: specs[K] extends FlagSpec<infer T, true> ? T : specs[K] extends FlagSpec<infer T, false> ? T | undefined : never
}

export type ParseFlagsReturnType<specs extends FlagSpecs> = { help: true } | { help: false; values: ParsedFlags<specs> }

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
  constructor(readonly flag: string) {
    super(`${flag} is given more than once`)
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

/**
 * Parses `--name value` and `--name=value` pairs against `specs` (keys in camelCase, flags in kebab-case).
 * `--help` or `-h` anywhere asks for help. A value may start with a single dash (`--port -1` is a bad port,
 * not a missing one); a following `--flag` means the value is missing.
 */
export function parseFlags<const specs extends FlagSpecs>(argv: readonly string[], specs: specs): ParseFlagsReturnType<specs> {
  if (argv.some((a) => a === '--help' || a === '-h')) return { help: true }
  const byName = new Map(Object.keys(specs).map((key) => [flagName(key), key]))
  const raw = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith('-') || arg === '-') throw new UnexpectedArgumentError(arg)
    const eq = arg.indexOf('=')
    const name = eq === -1 ? arg : arg.slice(0, eq)
    const key = byName.get(name)
    if (key === undefined) throw new UnknownFlagError(name)
    const spec = specs[key]!
    let value: string | undefined
    if (eq !== -1) value = arg.slice(eq + 1)
    else if (spec.switch) value = 'true'
    else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) value = argv[++i]
    if (value === undefined || value === '') throw new MissingFlagValueError(name, spec.valueName)
    const earlier = raw.get(key)
    if (earlier !== undefined && !spec.repeatable) throw new RepeatedFlagError(name)
    raw.set(key, earlier === undefined ? value : `${earlier},${value}`)
  }
  const values: Record<string, unknown> = {}
  for (const [key, spec] of Object.entries(specs)) {
    const text = raw.get(key)
    if (text === undefined) {
      values[key] = spec.default
      continue
    }
    const value = spec.parse(text)
    if (value === undefined) throw new InvalidFlagValueError(flagName(key), text, spec.expected)
    values[key] = value
  }
  return { help: false, values: values as ParsedFlags<specs> }
}

/** The flags part of a command's usage, one aligned line per flag. */
export function formatFlags(specs: FlagSpecs): string {
  const heads = Object.entries(specs).map(([key, spec]) => (spec.switch ? flagName(key) : `${flagName(key)} <${spec.valueName}>`))
  const width = Math.max(...heads.map((h) => h.length))
  return Object.values(specs)
    .map((spec, i) => {
      const shown = spec.default === undefined || spec.switch ? '' : ` (default: ${String(spec.default)})`
      return `  ${heads[i]!.padEnd(width)}  ${spec.description}${shown}`
    })
    .join('\n')
}

type FlagOptions<T> = { description: string; valueName?: string; default?: T }

function flag<T>(options: FlagOptions<T>, valueName: string, expected: string, parse: (raw: string) => T | undefined): FlagSpec<T> {
  return { description: options.description, valueName: options.valueName ?? valueName, expected, parse, default: options.default as never }
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
