import { describe, expect, expectTypeOf, test } from 'vitest'
import {
  flagName,
  formatFlags,
  integerFlag,
  InvalidFlagValueError,
  MissingFlagValueError,
  parseFlags,
  positiveNumberFlag,
  RepeatedFlagError,
  stringFlag,
  UnexpectedArgumentError,
  UnknownFlagError,
} from '../../src/cli/args.ts'
import { UsageError } from '../../src/cli/cliError.ts'

const specs = {
  port: integerFlag({ description: 'port', valueName: 'PORT', min: 0, max: 65535, default: 8545 }),
  blockTime: positiveNumberFlag({ description: 'block time', valueName: 'SECONDS' }),
  name: stringFlag({ description: 'a name', default: 'x' }),
}

function parse(argv: string[]) {
  const result = parseFlags(argv, specs)
  if (result.help) throw new Error('unexpected help')
  return result.values
}

function parseError(argv: string[]): unknown {
  try {
    parseFlags(argv, specs)
  } catch (e) {
    return e
  }
  throw new Error(`${JSON.stringify(argv)} parsed`)
}

describe('parseFlags', () => {
  test('fills in defaults and leaves flags without one undefined', () => {
    expect(parse([])).toEqual({ port: 8545, blockTime: undefined, name: 'x' })
    expectTypeOf(parse([])).toEqualTypeOf<{ port: number; blockTime: number | undefined; name: string }>()
  })

  test('reads camelCase keys from kebab-case flags, as `--flag value` or `--flag=value`', () => {
    expect(parse(['--block-time', '0.5', '--port=0', '--name', 'a=b'])).toEqual({ port: 0, blockTime: 0.5, name: 'a=b' })
    expect(flagName('maxTokenNetworks')).toBe('--max-token-networks')
  })

  test('asks for help on --help or -h anywhere, even next to bad flags', () => {
    expect(parseFlags(['--port', 'x', '--help'], specs)).toEqual({ help: true })
    expect(parseFlags(['-h'], specs)).toEqual({ help: true })
  })

  test.each([
    [['--nope'], UnknownFlagError, 'unknown flag --nope'],
    [['--blockTime', '1'], UnknownFlagError, 'unknown flag --blockTime'],
    [['--port'], MissingFlagValueError, '--port needs a value: --port <PORT>'],
    [['--port', '--name', 'a'], MissingFlagValueError, '--port needs a value: --port <PORT>'],
    [['--name='], MissingFlagValueError, '--name needs a value: --name <TEXT>'],
    [['--port', '1e3'], InvalidFlagValueError, '--port must be an integer from 0 to 65535, got "1e3"'],
    [['--port', '-1'], InvalidFlagValueError, '--port must be an integer from 0 to 65535, got "-1"'],
    [['--port', '80.5'], InvalidFlagValueError, '--port must be an integer from 0 to 65535, got "80.5"'],
    [['--block-time', '-2'], InvalidFlagValueError, '--block-time must be a positive number, got "-2"'],
    [['--port', '0x10'], InvalidFlagValueError, '--port must be an integer from 0 to 65535, got "0x10"'],
    [['--port', ' 80'], InvalidFlagValueError, '--port must be an integer from 0 to 65535, got " 80"'],
    [['--block-time', '0.0'], InvalidFlagValueError, '--block-time must be a positive number, got "0.0"'],
    [['--block-time', 'Infinity'], InvalidFlagValueError, '--block-time must be a positive number, got "Infinity"'],
    [['--name', 'a', '--name=b'], RepeatedFlagError, '--name is given more than once'],
    [['serve'], UnexpectedArgumentError, 'unexpected argument "serve"'],
    [['-'], UnexpectedArgumentError, 'unexpected argument "-"'],
  ])('%j throws %o', (argv, type, message) => {
    const error = parseError(argv)
    expect(error).toBeInstanceOf(type)
    expect(error).toBeInstanceOf(UsageError)
    expect((error as UsageError).exitCode).toBe(2)
    expect((error as Error).name).toBe(type.name)
    expect((error as Error).message).toBe(message)
  })

  test('a repeatable flag may be given more than once: its parser gets the values joined with commas', () => {
    const repeatable = { relay: { ...stringFlag({ description: 'relays' }), parse: (raw: string) => raw.split(','), repeatable: true as const } }
    const values = (argv: string[]) => {
      const result = parseFlags(argv, repeatable)
      if (result.help) throw new Error('unexpected help')
      return result.values.relay
    }
    expect(values(['--relay', '/a', '--relay=/b,/c'])).toEqual(['/a', '/b', '/c'])
    expect(values(['--relay', '/a'])).toEqual(['/a'])
    expect(values([])).toBeUndefined()
  })

  test('accepts decimals for positive numbers and the bounds of integers', () => {
    expect(parse(['--block-time', '.25']).blockTime).toBe(0.25)
    expect(parse(['--block-time', '3.']).blockTime).toBe(3)
    expect(parse(['--port', '65535']).port).toBe(65535)
  })
})

test('formatFlags aligns one line per flag and shows defaults', () => {
  expect(formatFlags(specs).split('\n')).toEqual([
    '  --port <PORT>           port (default: 8545)',
    '  --block-time <SECONDS>  block time',
    '  --name <TEXT>           a name (default: x)',
  ])
})
