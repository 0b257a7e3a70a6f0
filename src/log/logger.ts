/**
 * The logger every host uses (the CLI's commands, the page's node worker): levels, fields, child loggers, and one
 * line per record, JSON or for a person. Our own rather than pino's browser build, which would add 5.3 kB gzipped
 * to the node's worker (docs/decisions/0041-our-own-logger.md). Browser-safe: formatting is pure (./format.ts) and
 * where the lines go is given.
 */
import { SluiceError } from '../errors.ts'
import { formatJson, formatPretty, LOG_LEVELS, type LogFields, type LogLevel, type LogRecord } from './format.ts'

export { fillMessage, formatJson, formatPretty, LOG_LEVELS, type LogFields, type LogLevel, type LogRecord } from './format.ts'

/** A logger's threshold: a level, or `silent` for nothing at all. */
export type LogThreshold = LogLevel | 'silent'
export const LOG_THRESHOLDS: readonly LogThreshold[] = [...LOG_LEVELS, 'silent']
export type LogFormat = 'pretty' | 'json'
/** Where a formatted line goes, with its level (a console method, a stream, a message to the page). */
export type LogWrite = (line: string, level: LogLevel) => void

export type LoggerOptions = {
  /** Records below this level are dropped before they are formatted. */
  level: LogThreshold
  /** `json`: one JSON object a line, for machines; `pretty`: `HH:MM:SS.mmm LEVEL msg key=value`, for a person. */
  format: LogFormat
  /** Default: the console method of the level (in Node, debug and info to stdout, warn and error to stderr). */
  write?: LogWrite
  /** Milliseconds since the epoch; default Date.now. */
  now?: () => number
}

/** A message may name its fields, `{name}` (see fillMessage in ./format.ts): `logger.info('REST API: {url}', { url })`. */
export type Logger = {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
  /** True when a record of `level` would be written: for fields that cost something to compute. */
  enabled(level: LogLevel): boolean
  /** A logger that adds `fields` to each of its records (a record's own fields win over them). */
  child(fields: LogFields): Logger
}

export class InvalidLogLevelError extends SluiceError {
  override name = 'InvalidLogLevelError' as const
  override readonly code = 'INVALID_LOG_LEVEL' as const
}

export function isLogThreshold(value: unknown): value is LogThreshold {
  return typeof value === 'string' && (LOG_THRESHOLDS as readonly string[]).includes(value)
}

/** A threshold from a flag or an option as given, or INVALID_LOG_LEVEL with the levels there are. */
export function parseLogThreshold(text: unknown): LogThreshold {
  if (isLogThreshold(text)) return text
  throw new InvalidLogLevelError(
    `the log level must be one of ${LOG_THRESHOLDS.join(', ')}, not ${typeof text === 'string' ? JSON.stringify(text) : String(text)}`,
  )
}

/** Writes each line with the console method of its level. */
export const consoleWrite: LogWrite = (line, level) => console[level](line)

const RANK: Record<LogThreshold, number> = { debug: 0, info: 1, warn: 2, error: 3, silent: 4 }

/** True when a record of `level` passes `threshold`. */
export function passes(level: LogLevel, threshold: LogThreshold): boolean {
  return RANK[level] >= RANK[threshold]
}

export function createLogger({ level, format, write = consoleWrite, now = Date.now }: LoggerOptions): Logger {
  const threshold = parseLogThreshold(level)
  const toLine = format === 'json' ? formatJson : formatPretty
  const emit = (recordLevel: LogLevel, msg: string, bound: LogFields, own: LogFields | undefined) => {
    const record: LogRecord = { time: now(), level: recordLevel, msg: String(msg), fields: bound }
    let line: string
    try {
      line = toLine(own ? { ...record, fields: { ...bound, ...own } } : record)
    } catch (error) {
      // A field that cannot be read (a getter that throws) costs the fields, never the record or the caller.
      line = toLine({ ...record, fields: { unloggable: error instanceof Error ? error.message : String(error) } })
    }
    try {
      write(line, recordLevel)
    } catch {
      // Nowhere left to say it (a closed stream, a page gone): the node goes on without this line.
    }
  }
  const make = (bound: LogFields): Logger => {
    const at =
      (recordLevel: LogLevel) =>
      (msg: string, fields?: LogFields): void => {
        if (passes(recordLevel, threshold)) emit(recordLevel, msg, bound, fields)
      }
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      enabled: (recordLevel) => passes(recordLevel, threshold),
      child: (fields) => make({ ...bound, ...fields }),
    }
  }
  return make({})
}
