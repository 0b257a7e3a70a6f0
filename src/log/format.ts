import { errorCode, SluiceError, toErrorData } from '../errors.ts'

/** The levels a record can have, least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export type LogFields = Readonly<Record<string, unknown>>

/** One thing logged, before it is formatted; `time` in milliseconds since the epoch. */
export type LogRecord = { time: number; level: LogLevel; msg: string; fields: LogFields }

/** An error as a log shows it: its stable code (`INTERNAL` for anything not ours), never its stack. */
export type LoggedError = { name: string; code: string; message: string; details?: string; cause?: unknown }

/** The core keys of a JSON line; a field of the same name is written with `_` before it rather than hide one. */
const CORE_KEYS = new Set(['time', 'level', 'msg'])
/** Causes followed, and objects entered, at most this deep: a log line stays a line. */
const MAX_DEPTH = 8

/**
 * The record as one JSON object on one line (no newline at its end): `time` (ISO 8601, UTC), `level`, `msg`, then
 * the fields as plain JSON (bigints as decimal strings, errors as `{ name, code, message }`).
 */
export function formatJson(record: LogRecord): string {
  // No prototype: a field named `__proto__` is a key like any other.
  const line: Record<string, unknown> = Object.create(null)
  line.time = isoTime(record.time)
  line.level = record.level
  line.msg = fillMessage(record.msg, record.fields).text
  for (const [key, value] of Object.entries(record.fields)) {
    if (value === undefined) continue
    let free = key
    while (CORE_KEYS.has(free) || free in line) free = `_${free}`
    line[free] = plain(value, new Set(), 0)
  }
  return JSON.stringify(line)
}

/**
 * The record for a person at a terminal or a console, one line: `HH:MM:SS.mmm LEVEL msg key=value ...` (local
 * time). A value with spaces, quotes or control characters is quoted as a JSON string; objects are compact JSON.
 */
export function formatPretty(record: LogRecord): string {
  const { text, used } = fillMessage(record.msg, record.fields)
  let line = `${prettyHead(record.time, record.level)} ${escapeControls(text)}`
  for (const [key, value] of Object.entries(record.fields)) {
    if (value === undefined || used.has(key)) continue
    line += ` ${token(key)}=${prettyValue(value)}`
  }
  return line
}

/** `{name}` in a message: where the field `name` goes. */
const PLACEHOLDER = /\{([A-Za-z_$][\w$]*)\}/g

/**
 * The message with each `{name}` replaced by the value of the field `name` (a string as it is, a list as its items
 * separated by commas), and the names it used. So `REST API: {url}` reads as a sentence in both formats, and a line
 * for a person does not write the URL twice, while a JSON line still has it as a field of its own. A `{name}` with
 * no such field stays as it is; a value is never filled in again.
 */
export function fillMessage(msg: string, fields: LogFields): { text: string; used: ReadonlySet<string> } {
  const used = new Set<string>()
  if (!msg.includes('{')) return { text: msg, used }
  const text = msg.replace(PLACEHOLDER, (placeholder, name: string) => {
    if (!Object.hasOwn(fields, name) || fields[name] === undefined) return placeholder
    used.add(name)
    return inMessage(fields[name])
  })
  return { text, used }
}

function inMessage(value: unknown): string {
  if (typeof value === 'string') return value
  if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' ? item : compact(item))).join(', ')
  if (value instanceof Error) return describeChain(value)
  return compact(value)
}

/** Anything as compact JSON, or as String() where JSON has nothing (undefined, a symbol). */
function compact(value: unknown): string {
  if (typeof value !== 'object' || value === null) return String(value)
  const data = plain(value, new Set(), 0)
  return typeof data === 'string' ? data : (JSON.stringify(data) ?? String(data))
}

/** `HH:MM:SS.mmm LEVEL`, what a line for a person starts with (also the page's own notes, without the formatter). */
export function prettyHead(time: number, level: LogLevel): string {
  return `${clockTime(time)} ${level.toUpperCase().padEnd(5)}`
}

/** What a log says of an error, causes apart: the code is the one the API and the error tables use (src/errors.ts). */
function errorHead(error: Error): { name: string; code: string; message: string } {
  return { name: String(error.name), code: errorCode(error), message: toErrorData(error).message }
}

function loggedError(error: Error, seen: Set<object>, depth: number): LoggedError {
  const out: LoggedError = errorHead(error)
  // A SluiceError's details, or viem's (what the node answered, say).
  const details = error instanceof SluiceError ? error.details : (error as { details?: unknown }).details
  if (typeof details === 'string' && details !== '') out.details = details
  if (error.cause !== undefined) out.cause = plain(error.cause, seen, depth + 1)
  return out
}

/** `value` as plain JSON data: what JSON.stringify writes as it is, and never throws on. */
function plain(value: unknown, seen: Set<object>, depth: number): unknown {
  switch (typeof value) {
    case 'bigint':
      return value.toString()
    case 'function':
    case 'symbol':
      return String(value)
    case 'object':
      break
    default:
      return value
  }
  if (value === null) return null
  if (seen.has(value)) return '[Circular]'
  if (depth >= MAX_DEPTH) return '[Deep]'
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString()
  seen.add(value)
  try {
    if (value instanceof Error) return loggedError(value, seen, depth)
    if (Array.isArray(value)) return value.map((item) => plain(item, seen, depth + 1))
    const out: Record<string, unknown> = Object.create(null)
    for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = plain(item, seen, depth + 1)
    return out
  } finally {
    // Only the path from the root counts as a circle: the same object twice side by side is written twice.
    seen.delete(value)
  }
}

function prettyValue(value: unknown): string {
  if (typeof value === 'string') return token(value)
  if (value instanceof Error) return token(describeChain(value))
  if (typeof value !== 'object' || value === null) return String(value)
  return JSON.stringify(plain(value, new Set(), 0))
}

/** `Name: message (CODE)` and its causes, for a person; the code is left out where it is only INTERNAL. */
function describeChain(error: Error): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current !== undefined && current !== null && depth < MAX_DEPTH; depth++) {
    if (!(current instanceof Error)) {
      parts.push(String(current))
      break
    }
    const { name, code, message } = errorHead(current)
    parts.push(`${name}: ${message}${code === 'INTERNAL' ? '' : ` (${code})`}`)
    current = current.cause
  }
  return parts.join('; caused by ')
}

/** A key or a value bare where it reads unambiguously (no space, quote, `=` or control character), else a JSON string. */
function token(text: string): string {
  return text !== '' && !/[\s"'=\\\p{Cc}]/u.test(text) ? text : `"${escapeControls(JSON.stringify(text).slice(1, -1))}"`
}

/**
 * A message stays on its line and moves no terminal's cursor: control characters (DEL and the C1 ones too, which
 * JSON leaves) as escapes.
 */
function escapeControls(text: string): string {
  return text.replace(/\p{Cc}/gu, (c) => {
    const escaped = JSON.stringify(c).slice(1, -1)
    return escaped !== c ? escaped : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`
  })
}

function isoTime(time: number): string {
  const date = new Date(time)
  return Number.isNaN(date.getTime()) ? String(time) : date.toISOString()
}

function clockTime(time: number): string {
  const date = new Date(time)
  if (Number.isNaN(date.getTime())) return '--:--:--.---'
  const two = (n: number) => String(n).padStart(2, '0')
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, '0')}`
}
