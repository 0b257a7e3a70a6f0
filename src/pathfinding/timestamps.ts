/**
 * A PFSFeeUpdate's timestamp (Python's naive ISO-8601 in UTC, `YYYY-MM-DDTHH:MM:SS[.ffffff]`) as microseconds since
 * 1970, or undefined when it names no real instant (a 13th month, a 30th of February). Compared as numbers, not as
 * text: `...:00.5` and `...:00.500000` are the same instant.
 */
export function timestampMicros(timestamp: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(timestamp)
  if (!m) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second))
  // Date.UTC carries an out-of-range field over into the next one: a real instant reads back the same.
  if (
    date.getUTCFullYear() !== year ||
    date.getUTCMonth() !== month - 1 ||
    date.getUTCDate() !== day ||
    date.getUTCHours() !== hour ||
    date.getUTCMinutes() !== minute ||
    date.getUTCSeconds() !== second
  )
    return undefined
  return date.getTime() * 1000 + Number((m[7] ?? '').padEnd(6, '0'))
}
