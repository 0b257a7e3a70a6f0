import { DEFAULT_PATHFINDING_MAX_FEE, type FlagSettings } from '../node/nodeConfig.ts'
import { MAX_IMBALANCE_FEE_PPM, MAX_PROPORTIONAL_FEE_PPM } from '../protocol/fees/schedule.ts'
import type { FlagSpec } from './args.ts'
import { UsageError } from './cliError.ts'

const UINT256_MAX = 2n ** 256n - 1n

/**
 * `TOKEN VALUE` pairs, the flag repeated for other tokens (the values come joined with commas): an address and a
 * decimal integer in [0, max] each, every token once. Keyed by the token in lower case.
 */
function perToken(max: bigint): (raw: string) => Record<string, bigint> | undefined {
  return (raw) => {
    const values: Record<string, bigint> = {}
    for (const pair of raw.split(',')) {
      const [token, value, ...rest] = pair.trim().split(' ')
      if (rest.length || !token || !value || !/^0x[0-9a-fA-F]{40}$/.test(token) || !/^(0|[1-9]\d*)$/.test(value)) return undefined
      const amount = BigInt(value)
      if (amount > max || token.toLowerCase() in values) return undefined
      values[token.toLowerCase()] = amount
    }
    return values
  }
}

const pairFlag = (description: string, valueName: string, expected: string, max: bigint): FlagSpec<Record<string, bigint>, false> => ({
  description,
  valueName,
  expected,
  parse: perToken(max),
  default: undefined,
  repeatable: true,
  pair: true,
})

const capSwitch = (description: string): FlagSpec<boolean, false> => ({
  description,
  valueName: '',
  expected: 'true or false',
  parse: (raw) => (raw === 'true' ? true : raw === 'false' ? false : undefined),
  default: undefined,
  switch: true,
})

/** What a mediator charges and what a payment may cost in fees: Raiden's flags and names (docs/decisions/0069). */
export const feeFlags = {
  flatFee: pairFlag(
    "the flat fee of one mediation of TOKEN in its smallest unit, half of it on each of the payment's two channels; repeat for other tokens (default: none)",
    'TOKEN AMOUNT',
    'a token address and an amount (a decimal integer), each token once: --flat-fee 0x... 100',
    UINT256_MAX,
  ),
  proportionalFee: pairFlag(
    'the fee of one mediation of TOKEN in parts per million of the amount, 0 to 1000000; repeat for other tokens (default: none)',
    'TOKEN PPM',
    `a token address and parts per million from 0 to ${MAX_PROPORTIONAL_FEE_PPM}, each token once: --proportional-fee 0x... 4000`,
    MAX_PROPORTIONAL_FEE_PPM,
  ),
  proportionalImbalanceFee: pairFlag(
    "the imbalance penalty of a channel of TOKEN at its worst, in parts per million of the channel's capacity, 0 to 50000: a mediation that unbalances a channel pays more, one that balances it less; repeat for other tokens (default: none)",
    'TOKEN PPM',
    `a token address and parts per million from 0 to ${MAX_IMBALANCE_FEE_PPM}, each token once: --proportional-imbalance-fee 0x... 3000`,
    MAX_IMBALANCE_FEE_PPM,
  ),
  capMediationFees: capSwitch('a mediation fee is never negative (the default)'),
  noCapMediationFees: capSwitch('let the imbalance penalty make a mediation fee negative: a mediation that rebalances a channel is paid for'),
  pathfindingMaxFee: {
    description:
      'the most a payment may cost beyond its amount in mediation fees, the estimated fee with its margin, in the smallest unit of its token (a route that would cost more is not taken); also the most one route request to a pathfinding service may cost, in the service token (one asking more is not used)',
    valueName: 'AMOUNT',
    expected: 'a decimal integer',
    parse: (raw: string) => (/^(0|[1-9]\d*)$/.test(raw) && BigInt(raw) <= UINT256_MAX ? BigInt(raw) : undefined),
    default: DEFAULT_PATHFINDING_MAX_FEE,
  } as FlagSpec<bigint, true>,
}

type FeeFlagValues = {
  flatFee: Record<string, bigint> | undefined
  proportionalFee: Record<string, bigint> | undefined
  proportionalImbalanceFee: Record<string, bigint> | undefined
  capMediationFees: boolean | undefined
  noCapMediationFees: boolean | undefined
  pathfindingMaxFee: bigint
}

/** The node's fee settings from the flags; both --cap-mediation-fees and --no-cap-mediation-fees is a usage error. */
export function feeSettingsOf(
  flags: FeeFlagValues,
): Pick<FlagSettings, 'flatFee' | 'proportionalFee' | 'proportionalImbalanceFee' | 'capMediationFees' | 'pathfindingMaxFee'> {
  if (flags.capMediationFees !== undefined && flags.noCapMediationFees !== undefined)
    throw new UsageError('give --cap-mediation-fees or --no-cap-mediation-fees, not both')
  const capMediationFees = flags.noCapMediationFees !== undefined ? !flags.noCapMediationFees : (flags.capMediationFees ?? true)
  return {
    ...(flags.flatFee ? { flatFee: flags.flatFee } : {}),
    ...(flags.proportionalFee ? { proportionalFee: flags.proportionalFee } : {}),
    ...(flags.proportionalImbalanceFee ? { proportionalImbalanceFee: flags.proportionalImbalanceFee } : {}),
    capMediationFees,
    pathfindingMaxFee: flags.pathfindingMaxFee,
  }
}
