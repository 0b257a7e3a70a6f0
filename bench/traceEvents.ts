// A Chromium trace's events, read from the file a piece at a time: a trace of every thread with CPU samples runs
// to hundreds of MB, more than one string (or JSON.parse) can hold. Each event is parsed on its own.
import { createReadStream } from 'node:fs'

/** An event of the trace (JSON Object Format: `{"traceEvents": [...]}`, or a bare array of events). */
export type TraceEvent = {
  name?: string
  cat?: string
  ph?: string
  pid?: number
  tid?: number
  ts?: number
  dur?: number
  tdur?: number
  id?: string
  args?: Record<string, unknown>
}

const QUOTE = 34
const BACKSLASH = 92
const OPEN_OBJECT = 123
const CLOSE_OBJECT = 125
const OPEN_ARRAY = 91
const CLOSE_ARRAY = 93

/**
 * Calls `onEvent` with each element of the file's event array, in file order. `chunkBytes`: how much is read at a
 * time (tests read in tiny pieces, so that events and strings straddle them).
 */
export async function readTraceEvents(file: string, onEvent: (event: TraceEvent) => void, chunkBytes = 1 << 20): Promise<void> {
  let depth = 0
  let inString = false
  let escaped = false
  /** The depth inside the event array, once it is open (-1 before). */
  let eventsDepth = -1
  /** The latest string of the root object, with its characters so far: the key that names the array. */
  let rootString = ''
  let inRootString = false
  /** The current event's text from earlier pieces, and where it starts in this one (-1: no event open). */
  let carried = ''
  let start = -1
  for await (const piece of createReadStream(file, { encoding: 'utf8', highWaterMark: chunkBytes }) as AsyncIterable<string>) {
    if (carried !== '' || start >= 0) start = 0
    for (let i = 0; i < piece.length; i++) {
      const c = piece.charCodeAt(i)
      if (inString) {
        if (escaped) escaped = false
        else if (c === BACKSLASH) escaped = true
        else if (c === QUOTE) inString = inRootString = false
        if (inRootString) rootString += piece[i]
        continue
      }
      if (c === QUOTE) {
        inString = true
        if (depth === 1) {
          inRootString = true
          rootString = ''
        }
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        if (depth === 0 && c === OPEN_ARRAY) eventsDepth = 1
        else if (depth === 1 && c === OPEN_ARRAY && rootString === 'traceEvents') eventsDepth = 2
        else if (depth === eventsDepth && c === OPEN_OBJECT) start = i
        depth++
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        depth--
        if (depth === eventsDepth && c === CLOSE_OBJECT && start >= 0) {
          onEvent(JSON.parse(carried + piece.slice(start, i + 1)) as TraceEvent)
          carried = ''
          start = -1
        } else if (depth === eventsDepth - 1) eventsDepth = -1
      }
    }
    if (start >= 0) carried += piece.slice(start)
  }
  if (eventsDepth !== -1 || start >= 0) throw new Error(`${file}: the trace ends inside its events (cut short?)`)
}
