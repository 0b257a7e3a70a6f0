import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { readTraceEvents, type TraceEvent } from '../../../bench/traceEvents.ts'
import { tempDirs } from '../../support/tempDirs.ts'

/** A trace's events read a piece at a time (bench/traceEvents.ts), whatever falls across the pieces. */

const tempDir = tempDirs('sluice-trace-events-')

/** Strings that hold what the reader counts (braces, brackets, escaped quotes) and a character of several bytes. */
const EVENTS = [
  { name: 'thread_name', ph: 'M', pid: 1, tid: 2, args: { name: 'a "quoted" {thread} [0]' } },
  { name: 'X', ph: 'X', pid: 1, tid: 2, ts: 5, dur: 3, args: { data: { nested: [{ deep: ['}', ']'] }], back: 'slash \\' } } },
  { name: 'café ☕', ph: 'I', pid: 1, tid: 3, ts: 9 },
]

async function read(text: string, chunkBytes: number): Promise<TraceEvent[]> {
  const file = join(tempDir(), 'trace.json')
  writeFileSync(file, text)
  const events: TraceEvent[] = []
  await readTraceEvents(file, (e) => events.push(e), chunkBytes)
  return events
}

describe('readTraceEvents', () => {
  test('every event of the object format, in order, read 1, 7 or 1 MB at a time; the metadata beside them is no event', async () => {
    const text = `{"metadata":{"a":[{"b":1}]},"traceEvents":[\n${EVENTS.map((e) => JSON.stringify(e)).join(',\n')}],\n"more":{"c":{"d":2}}}`
    for (const size of [1, 7, 1 << 20]) expect(await read(text, size)).toEqual(EVENTS)
  })

  test('a bare array of events', async () => {
    expect(await read(JSON.stringify(EVENTS), 5)).toEqual(EVENTS)
  })

  test('a trace cut short inside its events is an error, not fewer events', async () => {
    const text = `{"traceEvents":[${JSON.stringify(EVENTS[0])},{"name":"cut`
    await expect(read(text, 16)).rejects.toThrow(/ends inside its events/)
  })
})
