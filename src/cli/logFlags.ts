import { LOG_LEVELS, type LogLevel } from '../log/format.ts'
import { consoleWrite, createLogger, type Logger, type LogWrite } from '../log/logger.ts'
import { switchFlag, type FlagSpec } from './args.ts'
import { UsageError } from './cliError.ts'

const isLevel = (raw: string): raw is LogLevel => (LOG_LEVELS as readonly string[]).includes(raw)

/** Raiden's level names (Python's logging) as ours. */
const RAIDEN_LEVELS: Record<string, LogLevel> = { debug: 'debug', info: 'info', warn: 'warn', warning: 'warn', error: 'error', critical: 'error' }

/**
 * The root level of Raiden's `--log-config`, a list of `module:LEVEL` (`raiden:debug,:warn`): the entry with no
 * module (`:warn`, or a bare `warn`) is the root, and sets our level. The other entries name Raiden's modules, which
 * we do not have: they are accepted and left alone. Without exactly one root entry the list sets nothing here, so
 * it is refused rather than read as something the operator did not ask for.
 */
export function parseLogConfig(raw: string): LogLevel | undefined {
  let root: LogLevel | undefined
  for (const entry of raw.split(',').map((e) => e.trim())) {
    const m = /^(?:([A-Za-z_][\w.]*)?:)?([A-Za-z]+)$/.exec(entry)
    const level = m ? RAIDEN_LEVELS[m[2]!.toLowerCase()] : undefined
    if (level === undefined) return undefined
    if (m![1] !== undefined) continue
    if (root !== undefined) return undefined
    root = level
  }
  return root
}

export const logFlags = {
  logLevel: {
    description: 'the least severe records written: debug, info, warn or error (default: info)',
    valueName: 'LEVEL',
    expected: 'debug, info, warn or error',
    parse: (raw: string) => (isLevel(raw) ? raw : undefined),
    default: undefined,
  } as FlagSpec<LogLevel, false>,
  logJson: switchFlag({ description: 'write the log as JSON lines (time, level, msg and fields), as Raiden does with the same flag' }),
  logConfig: {
    description: "Raiden's module:LEVEL list (:info, raiden:debug,:warn): its root level (:LEVEL, or a bare LEVEL) is --log-level",
    valueName: 'CONFIG',
    expected: 'a root level such as :info or info, alone or among module:LEVEL entries (raiden:debug,:warn)',
    parse: parseLogConfig,
    default: undefined,
  } as FlagSpec<LogLevel, false>,
}

export type LogFlagValues = { logLevel?: LogLevel | undefined; logJson: boolean; logConfig?: LogLevel | undefined }

/**
 * Each level to its console method (in Node debug and info go to stdout, warn and error to stderr); everything to
 * stderr with `stderrOnly`, when stdout carries a result (devnet --json).
 */
export function processWrite({ stderrOnly = false }: { stderrOnly?: boolean } = {}): LogWrite {
  return stderrOnly ? (line) => console.error(line) : consoleWrite
}

/** The command's logger as its flags ask: --log-level or --log-config (not both), --log-json. */
export function loggerFromFlags(flags: LogFlagValues, options: { stderrOnly?: boolean; now?: () => number } = {}): Logger {
  if (flags.logLevel !== undefined && flags.logConfig !== undefined) throw new UsageError('give either --log-level or --log-config, not both')
  return createLogger({
    level: flags.logLevel ?? flags.logConfig ?? 'info',
    format: flags.logJson ? 'json' : 'pretty',
    write: processWrite(options),
    ...(options.now ? { now: options.now } : {}),
  })
}
