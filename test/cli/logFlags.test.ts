import { describe, expect, test } from 'vitest'
import { parseFlags } from '../../src/cli/args.ts'
import { logFlags, loggerFromFlags, parseLogConfig } from '../../src/cli/logFlags.ts'

describe('the log flags', () => {
  test("Raiden's --log-config: the root entry (:LEVEL or a bare LEVEL) is the level; module entries are left alone", () => {
    expect(parseLogConfig(':info')).toBe('info')
    expect(parseLogConfig('debug')).toBe('debug')
    expect(parseLogConfig('raiden:debug,:warn')).toBe('warn')
    expect(parseLogConfig('raiden.network:DEBUG, :WARNING,web3:critical')).toBe('warn')
    expect(parseLogConfig(':CRITICAL')).toBe('error')
  })

  test('a --log-config that sets no level of ours is refused: no root, two roots, an unknown level, another syntax', () => {
    for (const raw of ['raiden:debug', ':info,:warn', ':loud', 'raiden=debug', ':', '', 'raiden:debug,,:info', 'a b:info'])
      expect(parseLogConfig(raw), raw).toBeUndefined()
    expect(() => parseFlags(['--log-config', 'raiden:debug'], logFlags)).toThrow(
      expect.objectContaining({ code: 'INVALID_FLAG_VALUE', message: expect.stringMatching(/^--log-config must be a root level such as :info/) }),
    )
    expect(() => parseFlags(['--log-level', 'WARN'], logFlags)).toThrow(expect.objectContaining({ code: 'INVALID_FLAG_VALUE' }))
  })

  test('--log-level or --log-config (not both) sets the threshold; info without either', () => {
    const threshold = (argv: string[]) => {
      const parsed = parseFlags(argv, logFlags)
      if (parsed.asked) throw new Error('asked')
      const log = loggerFromFlags(parsed.values)
      return (['debug', 'info', 'warn', 'error'] as const).find((level) => log.enabled(level))
    }
    expect(threshold([])).toBe('info')
    expect(threshold(['--log-level', 'debug'])).toBe('debug')
    expect(threshold(['--log-config', 'raiden:debug,:error'])).toBe('error')
    expect(() => threshold(['--log-level', 'warn', '--log-config', ':warn'])).toThrow(expect.objectContaining({ code: 'USAGE', exitCode: 2 }))
  })
})
