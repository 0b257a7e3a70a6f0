import fc from 'fast-check'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { createLogger, LOG_LEVELS, LOG_THRESHOLDS, parseLogThreshold, type LogLevel, type LogThreshold } from '../../../src/log/logger.ts'

/** The logger (src/log/logger.ts): the threshold, fields and child fields, where lines go, and that it never throws. */

const TIME = Date.UTC(2026, 10, 28, 7, 5, 9, 42)

function capture(level: LogThreshold, format: 'json' | 'pretty' = 'json') {
  const lines: { line: string; level: LogLevel }[] = []
  const logger = createLogger({ level, format, write: (line, at) => lines.push({ line, level: at }), now: () => TIME })
  return { logger, lines, records: () => lines.map(({ line }) => JSON.parse(line)) }
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe('createLogger', () => {
  test('each method writes one line at its level, with time from now(); the format is the one asked for', () => {
    const { logger, lines, records } = capture('debug')
    logger.debug('d')
    logger.info('i', { n: 1 })
    logger.warn('w')
    logger.error('e')
    expect(lines.map((l) => l.level)).toEqual(['debug', 'info', 'warn', 'error'])
    expect(records()).toEqual([
      { time: '2026-11-28T07:05:09.042Z', level: 'debug', msg: 'd' },
      { time: '2026-11-28T07:05:09.042Z', level: 'info', msg: 'i', n: 1 },
      { time: '2026-11-28T07:05:09.042Z', level: 'warn', msg: 'w' },
      { time: '2026-11-28T07:05:09.042Z', level: 'error', msg: 'e' },
    ])
    const pretty = capture('info', 'pretty')
    pretty.logger.warn('w', { n: 2n })
    expect(pretty.lines[0]!.line).toMatch(/^\d\d:\d\d:\d\d\.042 WARN {2}w n=2$/)
  })

  test('whatever the threshold: exactly the records at or above it are written, in order; silent writes nothing', () => {
    fc.assert(
      fc.property(fc.constantFrom(...LOG_THRESHOLDS), fc.array(fc.constantFrom(...LOG_LEVELS), { maxLength: 20 }), (threshold, calls) => {
        const { logger, lines } = capture(threshold)
        calls.forEach((level, i) => logger[level](`m${i}`))
        const rank = (l: LogThreshold) => LOG_THRESHOLDS.indexOf(l)
        const expected = calls.map((level, i) => ({ level, msg: `m${i}` })).filter(({ level }) => rank(level) >= rank(threshold))
        expect(lines.map(({ line, level }) => ({ level, msg: JSON.parse(line).msg }))).toEqual(expected)
        for (const level of LOG_LEVELS) expect(logger.enabled(level)).toBe(rank(level) >= rank(threshold))
      }),
    )
  })

  test("a child adds its fields to every record, a grandchild adds more; a record's own fields win; the parent is unchanged", () => {
    const { logger, records } = capture('info')
    const node = logger.child({ node: '0xabc', host: 'worker' })
    const channel = node.child({ channelId: 7n, host: 'channel' })
    channel.info('deposit', { amount: 5n, channelId: 8n })
    node.info('ready')
    logger.info('plain')
    expect(records()).toEqual([
      { time: '2026-11-28T07:05:09.042Z', level: 'info', msg: 'deposit', node: '0xabc', host: 'channel', channelId: '8', amount: '5' },
      { time: '2026-11-28T07:05:09.042Z', level: 'info', msg: 'ready', node: '0xabc', host: 'worker' },
      { time: '2026-11-28T07:05:09.042Z', level: 'info', msg: 'plain' },
    ])
  })

  test('a field that throws when read costs its fields, not the record; a write that throws does not reach the caller', () => {
    const { logger, records } = capture('info')
    logger.info('still here', {
      get bad() {
        throw new Error('unreadable')
      },
    })
    expect(records()).toEqual([{ time: '2026-11-28T07:05:09.042Z', level: 'info', msg: 'still here', unloggable: 'unreadable' }])
    const broken = createLogger({
      level: 'info',
      format: 'json',
      write: () => {
        throw new Error('EPIPE')
      },
    })
    expect(() => broken.error('lost')).not.toThrow()
  })

  test('without write, each line goes to the console method of its level', () => {
    const spies = Object.fromEntries(LOG_LEVELS.map((level) => [level, vi.spyOn(console, level).mockImplementation(() => {})]))
    const logger = createLogger({ level: 'debug', format: 'json', now: () => TIME })
    for (const level of LOG_LEVELS) logger[level](`to ${level}`)
    for (const level of LOG_LEVELS) {
      expect(spies[level]).toHaveBeenCalledTimes(1)
      expect(JSON.parse(spies[level]!.mock.calls[0]![0] as string)).toMatchObject({ level, msg: `to ${level}` })
    }
  })

  test('a level that does not exist is INVALID_LOG_LEVEL, from createLogger and from parseLogThreshold', () => {
    expect(() => createLogger({ level: 'verbose' as LogThreshold, format: 'json' })).toThrow(expect.objectContaining({ code: 'INVALID_LOG_LEVEL' }))
    expect(() => parseLogThreshold('INFO')).toThrow(/must be one of debug, info, warn, error, silent, not "INFO"/)
    for (const level of LOG_THRESHOLDS) expect(parseLogThreshold(level)).toBe(level)
  })
})
