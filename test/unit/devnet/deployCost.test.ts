import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient, type ChainClient } from '../../../src/chain/chainClient.ts'
import { createTransactionQueue } from '../../../src/chain/transactionQueue.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../../src/devnet/anvil.ts'
import { deployCost, gasOf } from '../../../src/devnet/deployCost.ts'
import { deployPlan, raidenDefaults } from '../../../src/devnet/deployPlan.ts'
import { memoryProgress } from '../../../src/devnet/deployProgress.ts'
import { runDeployment } from '../../../src/devnet/deployRunner.ts'

describe('deployCost', () => {
  let anvil: Anvil
  let chain: ChainClient
  beforeAll(async () => {
    anvil = await startAnvil()
    chain = await createChainClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0], pollingInterval: 20 })
  })
  afterAll(() => anvil.stop())

  test("each step's gas figure is what it uses on the chain, to within 1% above (it fails when the contracts change)", async () => {
    const plan = deployPlan(
      { ...raidenDefaults, testTokens: [{ symbol: 'TTT', name: 'Test Token' }], registerTestTokens: true, tokens: [] },
      { deployer: chain.address, chainId: chain.chainId },
    )
    const progress = memoryProgress()
    await runDeployment({ chain, queue: createTransactionQueue(chain), plan, progress })
    const { steps } = (await progress.load())!
    for (const step of plan.steps) {
      const { gasUsed } = await chain.publicClient.getTransactionReceipt({ hash: steps[step.id]!.hash! })
      expect(gasOf(step), step.id).toBeGreaterThanOrEqual(gasUsed)
      expect(gasOf(step), step.id).toBeLessThanOrEqual((gasUsed * 101n) / 100n)
    }
  })

  test("prices the steps at today's fees, under a cap if one is given, and says what the deployer holds", async () => {
    const plan = deployPlan({ ...raidenDefaults, testTokens: [], registerTestTokens: true, tokens: [] }, { deployer: chain.address, chainId: chain.chainId })
    const cost = await deployCost(chain.publicClient, chain.address, plan.steps)
    const gas = plan.steps.reduce((sum, s) => sum + gasOf(s), 0n)
    const fees = await chain.publicClient.estimateFeesPerGas()
    expect(cost).toMatchObject({ gas, deployer: chain.address, balance: await chain.publicClient.getBalance({ address: chain.address }) })
    expect(cost.steps.map((s) => s.id)).toEqual(plan.steps.map((s) => s.id))
    // Today's fee cap; the deployer must hold enough for all at it, and for the largest one's 20% gas margin.
    expect(cost.feePerGas).toBe(fees.maxFeePerGas)
    expect(cost.needed).toBe(gas * fees.maxFeePerGas + (3_927_000n * 20n * fees.maxFeePerGas) / 100n)
    expect(cost.likely).toBeLessThanOrEqual(gas * fees.maxFeePerGas)
    expect(cost.likely).toBeGreaterThan(0n)

    const capped = await deployCost(chain.publicClient, chain.address, plan.steps, { maxFeePerGas: 1000n })
    expect(capped.feePerGas).toBe(1000n)
    expect(capped.needed).toBe(gas * 1000n + (3_927_000n * 20n * 1000n) / 100n)
  })
})
