import { describe, expect, test } from 'vitest'
import { parseFlags } from '../../src/cli/args.ts'
import { feeFlags, feeSettingsOf } from '../../src/cli/feeFlags.ts'
import { DEFAULT_PATHFINDING_MAX_FEE } from '../../src/node/nodeConfig.ts'

// Raiden's mediation fee flags (raiden/ui/cli.py): per token, a token address and a value after the flag.

const token = '0x00000000000000000000000000000000000000Aa'
const other = '0x00000000000000000000000000000000000000bb'

function settings(argv: string[]) {
  const parsed = parseFlags(argv, feeFlags)
  if (parsed.asked) throw new Error(parsed.asked)
  return feeSettingsOf(parsed.values)
}

function failure(argv: string[]): string {
  try {
    settings(argv)
  } catch (e) {
    return (e as Error).message
  }
  throw new Error(`${argv.join(' ')} was taken`)
}

describe('the fee flags', () => {
  test('none given: no fees, capped, and the most a payment may cost in fees is Raiden’s 5 * 10^16', () => {
    expect(settings([])).toEqual({ capMediationFees: true, pathfindingMaxFee: DEFAULT_PATHFINDING_MAX_FEE })
    expect(DEFAULT_PATHFINDING_MAX_FEE).toBe(5n * 10n ** 16n)
  })

  test('per token, repeated for other tokens; addresses in lower case', () => {
    expect(
      settings([
        '--flat-fee',
        token,
        '100',
        '--flat-fee',
        other,
        '0',
        '--proportional-fee',
        token,
        '1000000',
        '--proportional-imbalance-fee',
        other,
        '50000',
        '--no-cap-mediation-fees',
        '--pathfinding-max-fee',
        '7',
      ]),
    ).toEqual({
      flatFee: { [token.toLowerCase()]: 100n, [other]: 0n },
      proportionalFee: { [token.toLowerCase()]: 1_000_000n },
      proportionalImbalanceFee: { [other]: 50_000n },
      capMediationFees: false,
      pathfindingMaxFee: 7n,
    })
    expect(settings(['--cap-mediation-fees'])).toMatchObject({ capMediationFees: true })
  })

  test.each([
    [['--flat-fee', token], '--flat-fee needs a value: --flat-fee <TOKEN AMOUNT>'],
    [['--flat-fee', '0x12', '5'], '--flat-fee must be a token address and an amount (a decimal integer), each token once'],
    [['--flat-fee', token, '-5'], '--flat-fee must be a token address and an amount'],
    [['--flat-fee', token, '1', '--flat-fee', token.toLowerCase(), '2'], 'each token once'],
    [['--proportional-fee', token, '1000001'], '--proportional-fee must be a token address and parts per million from 0 to 1000000'],
    [['--proportional-imbalance-fee', token, '50001'], '--proportional-imbalance-fee must be a token address and parts per million from 0 to 50000'],
    [['--pathfinding-max-fee', '1.5'], '--pathfinding-max-fee must be a decimal integer'],
    [['--cap-mediation-fees', '--no-cap-mediation-fees'], 'give --cap-mediation-fees or --no-cap-mediation-fees, not both'],
  ])('%j is refused: %s', (argv, message) => {
    expect(failure(argv)).toContain(message)
  })
})
