import { BaseError, Eip1559FeesNotSupportedError, type Address, type PublicClient } from 'viem'
import type { DeployStep } from './deployPlan.ts'

/**
 * What the steps left of a deployment cost, before any is sent: `sluice deploy --dry-run` prints it, and a deployer
 * with too little ETH is told before anything goes out.
 *
 * The gas of each step is a figure measured on anvil (test/unit/devnet/deployCost.test.ts fails when the contracts
 * change it), not an estimate: a constructor that checks its dependencies' code cannot be estimated before they are
 * on the chain. The fees are today's, as viem estimates them (EIP-1559), or the gas price of a chain without base fee.
 */

/** Gas used by each kind of step, measured on anvil (Cancun), rounded up to the thousand. */
export const stepGas = {
  SecretRegistry: 175_000n,
  CustomToken: 797_000n,
  TokenNetworkRegistry: 3_927_000n,
  ServiceRegistry: 1_567_000n,
  UserDeposit: 876_000n,
  OneToN: 871_000n,
  MonitoringService: 1_341_000n,
  'UserDeposit.init': 73_000n,
  /** createERC20TokenNetwork: mostly the new TokenNetwork; a token other than CustomToken may take a little more. */
  register: 3_090_000n,
} as const

/** Percent on top of the gas used that the transaction queue sets as each transaction's gas limit. */
const GAS_MARGIN = 20n

export function gasOf(step: DeployStep): bigint {
  if (step.kind === 'create') {
    const gas = stepGas[step.contract as keyof typeof stepGas]
    if (gas === undefined) throw new Error(`bug: no gas figure for ${step.contract}`)
    return gas
  }
  return step.id.startsWith('register ') ? stepGas.register : stepGas['UserDeposit.init']
}

export type DeployCost = {
  steps: { id: string; gas: bigint }[]
  gas: bigint
  /** The most a unit of gas costs at today's fees: maxFeePerGas (under `--max-fee-per-gas`), or the gas price. */
  feePerGas: bigint
  /** What it likely costs: the gas at today's base fee and tip (or gas price). */
  likely: bigint
  /** What the deployer must hold for every transaction to be accepted at today's fees. */
  needed: bigint
  balance: bigint
  deployer: Address
}

/** Today's cost of `steps`, and the deployer's balance. */
export async function deployCost(
  client: PublicClient,
  deployer: Address,
  steps: readonly DeployStep[],
  { maxFeePerGas }: { maxFeePerGas?: bigint } = {},
): Promise<DeployCost> {
  const [fees, balance] = await Promise.all([todaysFees(client), client.getBalance({ address: deployer })])
  const feePerGas = maxFeePerGas !== undefined && maxFeePerGas < fees.max ? maxFeePerGas : fees.max
  const likelyPerGas = fees.likely < feePerGas ? fees.likely : feePerGas
  const priced = steps.map((s) => ({ id: s.id, gas: gasOf(s) }))
  const gas = priced.reduce((sum, s) => sum + s.gas, 0n)
  const largest = priced.reduce((max, s) => (s.gas > max ? s.gas : max), 0n)
  // Each transaction is accepted only if the balance covers its whole gas limit (the gas with the queue's margin).
  const needed = gas * feePerGas + (largest * GAS_MARGIN * feePerGas) / 100n
  return { steps: priced, gas, feePerGas, likely: gas * likelyPerGas, needed, balance, deployer }
}

/** The fee a transaction would be signed with today (`max`), and what a unit of gas likely costs (base fee + tip). */
async function todaysFees(client: PublicClient): Promise<{ max: bigint; likely: bigint }> {
  try {
    const [{ maxFeePerGas, maxPriorityFeePerGas }, block] = await Promise.all([client.estimateFeesPerGas(), client.getBlock()])
    return { max: maxFeePerGas, likely: (block.baseFeePerGas ?? 0n) + maxPriorityFeePerGas }
  } catch (e) {
    if (!(e instanceof BaseError && e.walk((c) => c instanceof Eip1559FeesNotSupportedError))) throw e
    const gasPrice = await client.getGasPrice()
    return { max: gasPrice, likely: gasPrice }
  }
}
