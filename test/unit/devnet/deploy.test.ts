import { maxUint256, type Address } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CustomToken, MonitoringService, OneToN, ServiceRegistry, TokenNetworkRegistry, UserDeposit } from '../../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../../src/devnet/anvil.ts'
import { DeployContractsError, deployContracts, serviceRegistryParameters } from '../../../src/devnet/deploy.ts'
import { deployedContractNames, parseDeployment } from '../../../src/chain/deployment.ts'
import { createDevnetClient, type DevnetClient } from '../../../src/devnet/devnetClient.ts'

describe('deployContracts', () => {
  let anvil: Anvil
  let client: DevnetClient
  beforeAll(async () => {
    anvil = await startAnvil()
    client = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
  })
  afterAll(() => anvil.stop())

  test('deploys every contract wired to the others and returns a valid deployment', async () => {
    const deployment = await deployContracts(client, { rpcUrl: anvil.rpcUrl })
    expect(parseDeployment(deployment)).toEqual(deployment)
    expect(deployment).toMatchObject({ chainId: 31337, contracts_version: '0.40.0', rpcUrl: anvil.rpcUrl })
    const { contracts: c, serviceToken, tokens } = deployment
    const deployer = client.account.address
    const read = <const abi extends readonly unknown[]>(address: Address, abi: abi, functionName: string, args: unknown[] = []) =>
      client.readContract({ address, abi, functionName, args } as never) as Promise<unknown>

    // Each contract's code appears exactly in the block recorded for it; a node syncs from there.
    for (const name of deployedContractNames) {
      const { address, blockNumber } = c[name]
      expect(await client.getCode({ address, blockNumber: BigInt(blockNumber) }), name).toMatch(/^0x[0-9a-f]{10,}/)
      expect(await client.getCode({ address, blockNumber: BigInt(blockNumber - 1) }), name).toBeUndefined()
    }
    expect(c.SecretRegistry.blockNumber).toBeLessThan(c.TokenNetworkRegistry.blockNumber)

    const tnr = c.TokenNetworkRegistry.address
    expect(await read(tnr, TokenNetworkRegistry.abi, 'secret_registry_address')).toBe(c.SecretRegistry.address)
    expect(await read(tnr, TokenNetworkRegistry.abi, 'settlement_timeout_min')).toBe(5n)
    expect(await read(tnr, TokenNetworkRegistry.abi, 'settlement_timeout_max')).toBe(100_000n)
    expect(await read(tnr, TokenNetworkRegistry.abi, 'max_token_networks')).toBe(1000n)
    expect(await read(tnr, TokenNetworkRegistry.abi, 'controller')).toBe(deployer)

    const sr = c.ServiceRegistry.address
    expect(await read(sr, ServiceRegistry.abi, 'token')).toBe(serviceToken)
    expect(await read(sr, ServiceRegistry.abi, 'controller')).toBe(deployer)
    expect(await read(sr, ServiceRegistry.abi, 'set_price')).toBe(serviceRegistryParameters.initialPrice)
    expect(await read(sr, ServiceRegistry.abi, 'price_bump_numerator')).toBe(6n)
    expect(await read(sr, ServiceRegistry.abi, 'price_bump_denominator')).toBe(5n)
    expect(await read(sr, ServiceRegistry.abi, 'decay_constant')).toBe(200n * 86_400n)
    expect(await read(sr, ServiceRegistry.abi, 'min_price')).toBe(1000n)
    expect(await read(sr, ServiceRegistry.abi, 'registration_duration')).toBe(180n * 86_400n)

    const udc = c.UserDeposit.address
    expect(await read(udc, UserDeposit.abi, 'token')).toBe(serviceToken)
    expect(await read(udc, UserDeposit.abi, 'whole_balance_limit')).toBe(maxUint256)
    expect(await read(udc, UserDeposit.abi, 'withdraw_delay')).toBe(100n)
    expect(await read(udc, UserDeposit.abi, 'msc_address')).toBe(c.MonitoringService.address)
    expect(await read(udc, UserDeposit.abi, 'one_to_n_address')).toBe(c.OneToN.address)

    expect(await read(c.OneToN.address, OneToN.abi, 'deposit_contract')).toBe(udc)
    expect(await read(c.OneToN.address, OneToN.abi, 'chain_id')).toBe(31337n)
    expect(await read(c.OneToN.address, OneToN.abi, 'service_registry_contract')).toBe(sr)

    const ms = c.MonitoringService.address
    expect(await read(ms, MonitoringService.abi, 'token')).toBe(serviceToken)
    expect(await read(ms, MonitoringService.abi, 'service_registry')).toBe(sr)
    expect(await read(ms, MonitoringService.abi, 'user_deposit')).toBe(udc)
    expect(await read(ms, MonitoringService.abi, 'token_network_registry')).toBe(tnr)

    const tokenFacts = async (address: Address) => [
      await read(address, CustomToken.abi, 'symbol'),
      await read(address, CustomToken.abi, 'name'),
      await read(address, CustomToken.abi, 'decimals'),
      await read(address, CustomToken.abi, 'totalSupply'),
      await read(address, CustomToken.abi, 'balanceOf', [deployer]),
    ]
    expect(Object.keys(tokens)).toEqual(['TTT', 'TT2'])
    expect(await tokenFacts(tokens.TTT)).toEqual(['TTT', 'Test Token', 18, 10n ** 24n, 10n ** 24n])
    expect(await tokenFacts(tokens.TT2)).toEqual(['TT2', 'Test Token 2', 18, 10n ** 24n, 10n ** 24n])
    expect(await tokenFacts(serviceToken)).toEqual(['SVT', 'Service Token', 18, 10n ** 24n, 10n ** 24n])
  })

  test('deploys again after other transactions, with the registry limit and deposit cap given', async () => {
    const deployment = await deployContracts(client, { rpcUrl: anvil.rpcUrl, maxTokenNetworks: 3n, userDepositLimit: 10n ** 21n })
    const { TokenNetworkRegistry: tnr, UserDeposit: udc } = deployment.contracts
    expect(await client.readContract({ address: tnr.address, abi: TokenNetworkRegistry.abi, functionName: 'max_token_networks' })).toBe(3n)
    expect(await client.readContract({ address: udc.address, abi: UserDeposit.abi, functionName: 'whole_balance_limit' })).toBe(10n ** 21n)
    expect(await client.readContract({ address: udc.address, abi: UserDeposit.abi, functionName: 'msc_address' })).toBe(
      deployment.contracts.MonitoringService.address,
    )
  })

  test('fails with a DeployContractsError naming the step when the deployer cannot pay', async () => {
    const broke = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: generatePrivateKey() })
    const error = await deployContracts(broke, { rpcUrl: anvil.rpcUrl }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(DeployContractsError)
    expect(error).toMatchObject({ name: 'DeployContractsError', step: 'SecretRegistry' })
    expect((error as Error).message).toMatch(/^deploying SecretRegistry failed: /)
  })
})

test('on an interval-mining anvil, deployContracts mines each wave at once: four blocks, not four intervals', async () => {
  // With two minutes between blocks, waiting for the next block would outlast the test's timeout.
  const anvil = await startAnvil({ blockTime: 120 })
  try {
    const client = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
    const deployment = await deployContracts(client, { rpcUrl: anvil.rpcUrl })
    // The waves: what needs nothing; what needs those (the registry, ServiceRegistry, UserDeposit); OneToN and
    // MonitoringService; UserDeposit.init.
    const blocks = Object.fromEntries(Object.entries(deployment.contracts).map(([name, c]) => [name, c.blockNumber]))
    expect(blocks).toEqual({ SecretRegistry: 1, TokenNetworkRegistry: 2, ServiceRegistry: 2, UserDeposit: 2, OneToN: 3, MonitoringService: 3 })
    expect(await client.getBlockNumber()).toBe(4n)
  } finally {
    await anvil.stop()
  }
}, 30_000)
