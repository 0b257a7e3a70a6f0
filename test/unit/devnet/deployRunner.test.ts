import { getContractAddress } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { createChainClient, type ChainClient } from '../../../src/chain/chainClient.ts'
import { memoryJournal } from '../../../src/chain/transactionJournal.ts'
import { createTransactionQueue } from '../../../src/chain/transactionQueue.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../../src/devnet/anvil.ts'
import { memoryProgress, type DeployProgress, type ProgressStore } from '../../../src/devnet/deployProgress.ts'
import { deployPlan, raidenDefaults, type DeployParameters } from '../../../src/devnet/deployPlan.ts'
import { runDeployment, type RunDeploymentParameters } from '../../../src/devnet/deployRunner.ts'
import { checkDeployment, deploymentOf } from '../../../src/devnet/deploymentOfPlan.ts'

const parameters: DeployParameters = {
  ...raidenDefaults,
  testTokens: [
    { symbol: 'TTT', name: 'Test Token' },
    { symbol: 'TT2', name: 'Test Token 2' },
  ],
  registerTestTokens: true,
  tokens: [],
}
/** SecretRegistry, the service token, two test tokens, the registry, ServiceRegistry, UserDeposit, OneToN, MonitoringService, init, two registrations. */
const STEPS = 12

/** A store that keeps what it is given until `crashWhen` says the process died: from then on nothing more is kept. */
function crashingStore(crashWhen: (progress: DeployProgress) => boolean): ProgressStore & { kept: ProgressStore } {
  const kept = memoryProgress()
  let crashed = false
  return {
    kept,
    load: kept.load,
    remove: kept.remove,
    async save(progress) {
      crashed ||= crashWhen(progress)
      if (crashed) throw new Error('the process died here')
      await kept.save(progress)
    },
  }
}

async function rpc(anvil: Anvil, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(anvil.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  return ((await res.json()) as { result: unknown }).result
}

describe('runDeployment, resumed', () => {
  let anvil: Anvil
  let key = 0
  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(() => anvil.stop())

  /** A deployer of its own for each test, so that each starts from nonce 0 of its account. */
  async function deployer(): Promise<ChainClient> {
    return createChainClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[++key]!, pollingInterval: 20 })
  }
  function run(chain: ChainClient, progress: ProgressStore, more: Partial<RunDeploymentParameters> = {}) {
    const plan = deployPlan(parameters, { deployer: chain.address, chainId: chain.chainId })
    return { plan, running: runDeployment({ chain, queue: createTransactionQueue(chain), plan, progress, ...more }) }
  }
  const nonceOf = (chain: ChainClient) => chain.publicClient.getTransactionCount({ address: chain.address })

  test('creations broadcast before their records were written (a crash) are found at their nonces, not sent again', async () => {
    const chain = await deployer()
    // The process dies as the first transaction's record is being written: the four creations of the first wave are
    // broadcast (the queue sends them one after the other), none is recorded.
    const store = crashingStore((p) => Object.keys(p.steps).length > 0)
    const first = run(chain, store)
    await expect(first.running).rejects.toMatchObject({ code: 'DEPLOY_CONTRACTS' })
    expect(await nonceOf(chain)).toBe(4)
    expect((await store.kept.load())!.steps).toEqual({})

    const lines: string[] = []
    const again = run(chain, store.kept, { log: (line) => lines.push(line) })
    const result = await again.running
    expect(result.sent).toBe(STEPS - 4)
    expect(result.alreadyDone.sort()).toEqual(['SecretRegistry', 'service token', 'token TT2', 'token TTT'])
    expect(await nonceOf(chain)).toBe(STEPS)
    // Each found at the address its nonce gives: the two test tokens and the service token told apart by their symbols.
    const at = (nonce: number) => getContractAddress({ from: chain.address, nonce: BigInt(nonce) })
    expect(lines.filter((l) => l.includes(': found at'))).toEqual([
      `SecretRegistry: found at ${at(0)} (nonce 0), sent before the last run stopped`,
      `service token: found at ${at(1)} (nonce 1), sent before the last run stopped`,
      `token TTT: found at ${at(2)} (nonce 2), sent before the last run stopped`,
      `token TT2: found at ${at(3)} (nonce 3), sent before the last run stopped`,
    ])
    const deployment = await deploymentOf(chain.publicClient, again.plan, result, { chainId: chain.chainId, rpcUrl: anvil.rpcUrl })
    expect(await checkDeployment(chain.publicClient, chain.chainId, again.plan, deployment)).toEqual([])
  })

  test('a call made before a crash is seen done on the chain: UserDeposit initialised is not initialised again', async () => {
    const chain = await deployer()
    const store = crashingStore((p) => p.steps['UserDeposit.init'] !== undefined)
    await expect(run(chain, store).running).rejects.toMatchObject({ code: 'DEPLOY_CONTRACTS', step: 'UserDeposit.init' })
    expect(await nonceOf(chain)).toBe(STEPS)
    const result = await run(chain, store.kept).running
    expect(result.sent).toBe(0)
    expect(result.alreadyDone).toHaveLength(STEPS)
    expect(await nonceOf(chain)).toBe(STEPS)
  })

  test("refuses to continue another deployment's progress, and a recorded address that holds another contract", async () => {
    const chain = await deployer()
    const store = memoryProgress()
    const done = await run(chain, store).running
    const plan = deployPlan({ ...parameters, settleTimeoutMin: 20n }, { deployer: chain.address, chainId: chain.chainId })
    await expect(runDeployment({ chain, queue: createTransactionQueue(chain), plan, progress: store })).rejects.toMatchObject({
      code: 'DEPLOY_RESUME_MISMATCH',
      message: 'the deployment under way was started with settleTimeoutMin "500", not "20"',
    })

    // The record says the SecretRegistry is where the service token is.
    const recorded = (await store.load())!
    const serviceToken = done.addresses.get('service token')!
    recorded.steps.SecretRegistry!.address = serviceToken
    const tampered = memoryProgress()
    await tampered.save(recorded)
    await expect(run(chain, tampered).running).rejects.toMatchObject({
      code: 'DEPLOY_CONFLICT',
      message: `the code at ${serviceToken} (SecretRegistry, nonce ${recorded.steps.SecretRegistry!.nonce}) is not SecretRegistry's`,
    })
  })

  // The queue keeps every nonce in its journal until it is buried, and broadcasts again what a reorg removed.
  test('a step a reorg undid while the confirmations came is done again, and nothing twice', async () => {
    const chain = await deployer()
    const journal = memoryJournal()
    const lines: string[] = []
    let mining: ReturnType<typeof setInterval> | undefined
    const plan = deployPlan(parameters, { deployer: chain.address, chainId: chain.chainId })
    const running = runDeployment({
      chain,
      queue: createTransactionQueue(chain, { journal }),
      journal,
      plan,
      progress: memoryProgress(),
      confirmations: 3,
      log: (line) => {
        lines.push(line)
        if (!line.startsWith('waiting for 3 confirmations') || mining) return
        // All is mined, the last wave (UserDeposit.init) in the newest block: replace that block with an empty one,
        // then make the blocks the confirmations need (anvil mines a block for each transaction only).
        mining = setInterval(() => {}, 1000)
        void rpc(anvil, 'anvil_reorg', [1, []]).then(() => {
          clearInterval(mining)
          mining = setInterval(() => void rpc(anvil, 'evm_mine').catch(() => {}), 30)
        })
      },
    })
    try {
      const result = await running
      // The block that held the init holds nothing now: the init was mined again, at its nonce (the queue broadcast
      // it again, or the run sent it again once it saw it undone), and nothing was done twice.
      const first = Number(/^UserDeposit\.init: mined in block (\d+)$/m.exec(lines.join('\n'))![1])
      expect(((await rpc(anvil, 'eth_getBlockByNumber', [`0x${first.toString(16)}`, false])) as { transactions: unknown[] }).transactions).toEqual([])
      expect(await nonceOf(chain)).toBe(STEPS)
      const deployment = await deploymentOf(chain.publicClient, plan, result, { chainId: chain.chainId, rpcUrl: anvil.rpcUrl })
      expect(await checkDeployment(chain.publicClient, chain.chainId, plan, deployment)).toEqual([])
    } finally {
      clearInterval(mining)
    }
  })

  test('a chain that makes no block while the confirmations are awaited ends the run with CHAIN_STALLED', async () => {
    const chain = await deployer()
    const { running } = run(chain, memoryProgress(), { confirmations: 2, stallTimeoutMs: 300 })
    await expect(running).rejects.toMatchObject({ code: 'CHAIN_STALLED', message: expect.stringMatching(/^the chain made no block after \d+ for 0 s/) })
  })
})
