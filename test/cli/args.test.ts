import { parseArgs } from 'node:util'
import { describe, expect, expectTypeOf, test } from 'vitest'
import {
  answerAsked,
  flagName,
  formatFlags,
  integerFlag,
  InvalidFlagValueError,
  MissingFlagValueError,
  parseFlags,
  positiveNumberFlag,
  RepeatedFlagError,
  stringFlag,
  switchFlag,
  UnexpectedArgumentError,
  UnknownFlagError,
} from '../../src/cli/args.ts'
import { UsageError } from '../../src/cli/cliError.ts'
import { version } from '../../src/version.ts'

const specs = {
  port: integerFlag({ description: 'port', valueName: 'PORT', min: 0, max: 65535, default: 8545 }),
  blockTime: positiveNumberFlag({ description: 'block time', valueName: 'SECONDS' }),
  name: stringFlag({ description: 'a name', default: 'x' }),
  rpc: stringFlag({ description: 'an endpoint', valueName: 'URL', aliases: ['--eth-rpc-endpoint'] }),
  json: switchFlag({ description: 'JSON' }),
}

function parse(argv: string[]) {
  const result = parseFlags(argv, specs)
  if (result.asked) throw new Error(`unexpected ${result.asked}`)
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
    expect(parse([])).toEqual({ port: 8545, blockTime: undefined, name: 'x', rpc: undefined, json: false })
    expectTypeOf(parse([])).toEqualTypeOf<{ port: number; blockTime: number | undefined; name: string; rpc: string | undefined; json: boolean }>()
  })

  test('reads camelCase keys from kebab-case flags, as `--flag value` or `--flag=value`', () => {
    expect(parse(['--block-time', '0.5', '--port=0', '--name', 'a=b'])).toEqual({ port: 0, blockTime: 0.5, name: 'a=b', rpc: undefined, json: false })
    expect(flagName('maxTokenNetworks')).toBe('--max-token-networks')
  })

  test('asks for help on --help or -h anywhere, even next to bad flags or where a value should be', () => {
    expect(parseFlags(['--port', 'x', '--help'], specs)).toEqual({ asked: 'help' })
    expect(parseFlags(['-h'], specs)).toEqual({ asked: 'help' })
    expect(parseFlags(['--name', '--help'], specs)).toEqual({ asked: 'help' })
    expect(parseFlags(['--nope', '-h', 'serve'], specs)).toEqual({ asked: 'help' })
  })

  test('asks for the version on --version anywhere; --help wins over it', () => {
    expect(parseFlags(['--version'], specs)).toEqual({ asked: 'version' })
    expect(parseFlags(['--port', 'x', '--nope', '--version'], specs)).toEqual({ asked: 'version' })
    expect(parseFlags(['--version', '--help'], specs)).toEqual({ asked: 'help' })
    expect(parseFlags(['--version'], {})).toEqual({ asked: 'version' })
  })

  test('an alias is the flag under another name: either form, and errors name it as given', () => {
    expect(parse(['--eth-rpc-endpoint', 'http://a']).rpc).toBe('http://a')
    expect(parse(['--eth-rpc-endpoint=http://b']).rpc).toBe('http://b')
    expect(parse(['--rpc', 'http://c']).rpc).toBe('http://c')
    expect((parseError(['--eth-rpc-endpoint']) as Error).message).toBe('--eth-rpc-endpoint needs a value: --eth-rpc-endpoint <URL>')
    const aliased = { port: integerFlag({ description: 'port', min: 1, max: 9, aliases: ['--api-port'] }) }
    expect(() => parseFlags(['--api-port', '10'], aliased)).toThrow('--api-port must be an integer from 1 to 9, got "10"')
  })

  test('a flag given under two of its names is REPEATED_FLAG, whichever comes first', () => {
    for (const [argv, message] of [
      [['--rpc', 'http://a', '--eth-rpc-endpoint', 'http://b'], '--eth-rpc-endpoint is given more than once (--rpc is the same flag)'],
      [['--eth-rpc-endpoint=http://a', '--rpc=http://a'], '--rpc is given more than once (--eth-rpc-endpoint is the same flag)'],
      [['--eth-rpc-endpoint', 'http://a', '--eth-rpc-endpoint', 'http://b'], '--eth-rpc-endpoint is given more than once'],
    ] as const) {
      const error = parseError([...argv])
      expect(error).toBeInstanceOf(RepeatedFlagError)
      expect(error).toMatchObject({ code: 'REPEATED_FLAG', message })
    }
  })

  test('a value may start with a single dash, or with two after =; a --flag after a flag is its missing value', () => {
    expect(parse(['--name', '-x']).name).toBe('-x')
    expect(parse(['--name', '-']).name).toBe('-')
    expect(parse(['--name=--x']).name).toBe('--x')
    expect(parse(['--name', '-h=1']).name).toBe('-h=1')
    expect(parseError(['--name', '--json'])).toMatchObject({ code: 'MISSING_FLAG_VALUE', message: '--name needs a value: --name <TEXT>' })
    expect(parseError(['--name', '--'])).toMatchObject({ code: 'MISSING_FLAG_VALUE' })
  })

  test('a switch is true alone, takes true or false after =, and never takes the next argument', () => {
    expect(parse(['--json']).json).toBe(true)
    expect(parse(['--json=true']).json).toBe(true)
    expect(parse(['--json=false']).json).toBe(false)
    expect(parse(['--json', '--port', '1'])).toMatchObject({ json: true, port: 1 })
    expect(parseError(['--json', 'false'])).toMatchObject({ code: 'UNEXPECTED_ARGUMENT', message: 'unexpected argument "false"' })
    expect(parseError(['--json=yes'])).toMatchObject({ code: 'INVALID_FLAG_VALUE', message: '--json must be true or false, got "yes"' })
    expect(parseError(['--json', '--json=false'])).toMatchObject({ code: 'REPEATED_FLAG' })
  })

  // Each input is one that parseArgs in strict mode refuses with the code given: ours answers it with its own error.
  test.each([
    [['--nope', '1'], 'ERR_PARSE_ARGS_UNKNOWN_OPTION', UnknownFlagError, 'unknown flag --nope'],
    [['-x'], 'ERR_PARSE_ARGS_UNKNOWN_OPTION', UnknownFlagError, 'unknown flag -x'],
    [['-abc'], 'ERR_PARSE_ARGS_UNKNOWN_OPTION', UnknownFlagError, 'unknown flag -abc'],
    [['--no-json'], 'ERR_PARSE_ARGS_UNKNOWN_OPTION', UnknownFlagError, 'unknown flag --no-json'],
    [['--port'], 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', MissingFlagValueError, '--port needs a value: --port <PORT>'],
    [['--port', '--json'], 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', MissingFlagValueError, '--port needs a value: --port <PORT>'],
    [['--port', '-1'], 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', InvalidFlagValueError, '--port must be an integer from 0 to 65535, got "-1"'],
    [['--json=maybe'], 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE', InvalidFlagValueError, '--json must be true or false, got "maybe"'],
    [['serve'], 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL', UnexpectedArgumentError, 'unexpected argument "serve"'],
    [['--json', 'x'], 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL', UnexpectedArgumentError, 'unexpected argument "x"'],
  ])('%j: parseArgs says %s, we throw %o', (argv, nodeCode, type, message) => {
    const options = { port: { type: 'string' }, json: { type: 'boolean' } } as const
    expect(() => parseArgs({ args: argv, options, strict: true, allowPositionals: false })).toThrow(expect.objectContaining({ code: nodeCode }))
    const error = parseError(argv)
    expect(error).toBeInstanceOf(type)
    expect((error as Error).message).toBe(message)
    expect((error as { code: string }).code).not.toMatch(/^ERR_/)
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
    [['--', '--port', '1'], UnexpectedArgumentError, 'unexpected argument "--"'],
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
      if (result.asked) throw new Error(`unexpected ${result.asked}`)
      return result.values.relay
    }
    expect(values(['--relay', '/a', '--relay=/b,/c'])).toEqual(['/a', '/b', '/c'])
    expect(values(['--relay', '/a'])).toEqual(['/a'])
    expect(values([])).toBeUndefined()
  })

  test("a pair flag takes the next two arguments, as Raiden's --flat-fee TOKEN AMOUNT; repeated, its pairs come joined with commas", () => {
    const pairs = {
      fee: { ...stringFlag({ description: 'fees', valueName: 'TOKEN AMOUNT' }), repeatable: true as const, pair: true as const },
      json: switchFlag({ description: 'JSON' }),
    }
    const values = (argv: string[]) => {
      const result = parseFlags(argv, pairs)
      if (result.asked) throw new Error(`unexpected ${result.asked}`)
      return result.values
    }
    expect(values(['--fee', '0xa', '10', '--json', '--fee=0xb', '-5'])).toEqual({ fee: '0xa 10,0xb -5', json: true })
    expect(values(['--fee', '0xa', '-abc'])).toEqual({ fee: '0xa -abc', json: false })
    const error = (argv: string[]) => {
      try {
        parseFlags(argv, pairs)
      } catch (e) {
        return e
      }
      throw new Error(`${JSON.stringify(argv)} parsed`)
    }
    for (const argv of [['--fee', '0xa'], ['--fee', '0xa', '--json'], ['--fee=0xa']])
      expect(error(argv)).toMatchObject({ code: 'MISSING_FLAG_VALUE', message: '--fee needs a value: --fee <TOKEN AMOUNT>' })
    expect(error(['--fee', '0xa', '1', '2'])).toMatchObject({ code: 'UNEXPECTED_ARGUMENT', message: 'unexpected argument "2"' })
    expect(formatFlags(pairs).split('\n')[0]).toBe('  --fee <TOKEN> <AMOUNT>  fees')
  })

  test('accepts decimals for positive numbers and the bounds of integers', () => {
    expect(parse(['--block-time', '.25']).blockTime).toBe(0.25)
    expect(parse(['--block-time', '3.']).blockTime).toBe(3)
    expect(parse(['--port', '65535']).port).toBe(65535)
  })
})

test('formatFlags aligns one line per flag, shows aliases beside the flag and defaults', () => {
  expect(formatFlags(specs).split('\n')).toEqual([
    '  --port <PORT>                    port (default: 8545)',
    '  --block-time <SECONDS>           block time',
    '  --name <TEXT>                    a name (default: x)',
    '  --rpc, --eth-rpc-endpoint <URL>  an endpoint',
    '  --json                           JSON',
  ])
})

test('answerAsked prints the usage for help and the version for version, and exits 0', () => {
  const lines: unknown[] = []
  const log = console.log
  console.log = (line: unknown) => lines.push(line)
  try {
    expect(answerAsked('help', 'Usage: x')).toBe(0)
    expect(answerAsked('version', 'Usage: x')).toBe(0)
  } finally {
    console.log = log
  }
  expect(lines).toEqual(['Usage: x', version])
})
