import { waitForReceipt } from '../../src/chain/receipt.ts'
// Fixtures for the service contracts (UserDeposit, ServiceRegistry, OneToN, MonitoringService) on anvil.
// No vitest imports, so scripts run under tsx can reuse it.
import {
  BaseError,
  decodeErrorResult,
  encodeDeployData,
  getAddress,
  maxUint256,
  WaitForTransactionReceiptTimeoutError,
  type Abi,
  type Address,
  type ContractConstructorArgs,
  type Hex,
} from 'viem'
import { CustomToken, MonitoringService, OneToN, ServiceRegistry, UserDeposit, bytecode } from '../../src/contracts/index.ts'
import type { AnvilClient } from './clients.ts'
import { deploy } from './deploy.ts'

/** Waits for a transaction and fails loudly unless it succeeded. Wrap a `writeContract` promise with it. */
export async function mined(client: AnvilClient, hash: Promise<Hex> | Hex) {
  const sent = await hash
  let receipt: Awaited<ReturnType<AnvilClient['waitForTransactionReceipt']>>
  try {
    // anvil mines each transaction at once: one not mined in 20 s is stuck, and saying why beats a test timeout.
    receipt = await waitForReceipt(client, sent, { timeout: 20_000 })
  } catch (error) {
    if (!(error instanceof WaitForTransactionReceiptTimeoutError)) throw error
    throw new Error(`transaction ${sent} was not mined within 20 s: ${await whyNotMined(client, sent)}`, { cause: error })
  }
  if (receipt.status !== 'success') throw new Error(`transaction ${receipt.transactionHash} reverted`)
  return receipt
}

/** What anvil knows of a transaction that was not mined: its nonce against the sender's, and the pool. */
async function whyNotMined(client: AnvilClient, hash: Hex): Promise<string> {
  const tx = await client.getTransaction({ hash }).catch((e: unknown) => e as Error)
  if (tx instanceof Error) return `anvil does not know it (${tx.message.split('\n')[0]})`
  const [latest, pending, block] = await Promise.all([
    client.getTransactionCount({ address: tx.from, blockTag: 'latest' }),
    client.getTransactionCount({ address: tx.from, blockTag: 'pending' }),
    client.getBlockNumber(),
  ])
  const pool = await client.request({ method: 'txpool_status' } as never).catch(() => 'unknown')
  return `nonce ${tx.nonce} of ${tx.from} (latest ${latest}, pending ${pending}), block ${block}, txpool ${JSON.stringify(pool)}`
}

/** Mines empty blocks until the latest block is `target` (eth_call runs with block.number = latest on anvil). */
export async function mineTo(client: AnvilClient, target: bigint): Promise<void> {
  const latest = await client.getBlockNumber()
  if (target < latest) throw new Error(`block ${target} is already past (latest ${latest})`)
  if (target > latest) await client.mine({ blocks: Number(target - latest) })
}

/** Mines one block with exactly this timestamp (ServiceRegistry counts seconds). */
export async function mineAt(client: AnvilClient, timestamp: bigint): Promise<void> {
  await client.setNextBlockTimestamp({ timestamp })
  await client.mine({ blocks: 1 })
}

export async function latestTimestamp(client: AnvilClient): Promise<bigint> {
  return (await client.getBlock({ blockTag: 'latest' })).timestamp
}

/** Registration parameters close to raiden-contracts' test setup, in seconds. */
export const registryDefaults = {
  initialPrice: 2000n,
  priceBumpNumerator: 1n,
  priceBumpDenominator: 1n,
  decayConstant: 200n * 86400n,
  minPrice: 1000n,
  registrationDuration: 180n * 86400n,
}

export type ServiceParameters = {
  /** UserDeposit's cap on the sum of all balances. */
  wholeBalanceLimit?: bigint
  /** Chain id OneToN puts in IOUs; anvil's by default. */
  chainId?: bigint
  /** A TokenNetworkRegistry for MonitoringService; any contract works for tests that never monitor. */
  tokenNetworkRegistry?: Address
  registry?: Partial<typeof registryDefaults>
}

export type Services = {
  token: Address
  userDeposit: Address
  serviceRegistry: Address
  oneToN: Address
  monitoringService: Address
  chainId: bigint
}

/**
 * Deploys the service token, UserDeposit, ServiceRegistry (controller: the deployer), OneToN and
 * MonitoringService, and wires UserDeposit to the last two, as a deployment does.
 */
export async function deployServices(client: AnvilClient, parameters: ServiceParameters = {}): Promise<Services> {
  const r = { ...registryDefaults, ...parameters.registry }
  const chainId = parameters.chainId ?? BigInt(await client.getChainId())
  const token = await deploy(client, CustomToken, [10n ** 27n, 18, 'Service Token', 'SVT'])
  const userDeposit = await deploy(client, UserDeposit, [token, parameters.wholeBalanceLimit ?? 10n ** 30n])
  const serviceRegistry = await deploy(client, ServiceRegistry, [
    token,
    client.account.address,
    r.initialPrice,
    r.priceBumpNumerator,
    r.priceBumpDenominator,
    r.decayConstant,
    r.minPrice,
    r.registrationDuration,
  ])
  const oneToN = await deploy(client, OneToN, [userDeposit, chainId, serviceRegistry])
  const monitoringService = await deploy(client, MonitoringService, [token, serviceRegistry, userDeposit, parameters.tokenNetworkRegistry ?? token])
  await mined(client, client.writeContract({ address: userDeposit, abi: UserDeposit.abi, functionName: 'init', args: [monitoringService, oneToN] }))
  // Receipts give lowercase addresses; contract getters return checksummed ones.
  return {
    token: getAddress(token),
    userDeposit: getAddress(userDeposit),
    serviceRegistry: getAddress(serviceRegistry),
    oneToN: getAddress(oneToN),
    monitoringService: getAddress(monitoringService),
    chainId,
  }
}

/** Mints `amount` service tokens to the caller of `client` and lets `spender` take them. */
export async function fund(client: AnvilClient, token: Address, spender: Address, amount: bigint): Promise<void> {
  await mined(client, client.writeContract({ address: token, abi: CustomToken.abi, functionName: 'mint', args: [amount] }))
  await mined(client, client.writeContract({ address: token, abi: CustomToken.abi, functionName: 'approve', args: [spender, amount] }))
}

/** Registers (or extends) the service behind `service` in the ServiceRegistry at whatever the price is now. */
export async function registerService(service: AnvilClient, services: Services) {
  // The price decays every second, so pin the timestamps of the three blocks this takes and fund exactly the
  // price the registry will charge in the last one (reading currentPrice now races anvil's clock under load).
  const registry = { address: services.serviceRegistry, abi: ServiceRegistry.abi } as const
  const latest = (await service.getBlock()).timestamp
  const now = BigInt(Math.floor(Date.now() / 1000))
  const at = (latest > now ? latest : now) + 3n
  const [setPrice, setPriceAt] = await Promise.all([
    service.readContract({ ...registry, functionName: 'set_price' }),
    service.readContract({ ...registry, functionName: 'set_price_at' }),
  ])
  const price = await service.readContract({ ...registry, functionName: 'decayedPrice', args: [setPrice, at - setPriceAt] })
  await service.setNextBlockTimestamp({ timestamp: at - 2n })
  await mined(service, service.writeContract({ address: services.token, abi: CustomToken.abi, functionName: 'mint', args: [price] }))
  await service.setNextBlockTimestamp({ timestamp: at - 1n })
  await mined(
    service,
    service.writeContract({ address: services.token, abi: CustomToken.abi, functionName: 'approve', args: [services.serviceRegistry, price] }),
  )
  await service.setNextBlockTimestamp({ timestamp: at })
  return mined(service, service.writeContract({ ...registry, functionName: 'deposit', args: [maxUint256] }))
}

/** Adds `amount` to `beneficiary`'s user deposit, paid by the caller of `payer`. */
export async function depositToUdc(payer: AnvilClient, services: Services, beneficiary: Address, amount: bigint) {
  const total = await payer.readContract({ address: services.userDeposit, abi: UserDeposit.abi, functionName: 'total_deposit', args: [beneficiary] })
  await fund(payer, services.token, services.userDeposit, amount)
  return mined(
    payer,
    payer.writeContract({ address: services.userDeposit, abi: UserDeposit.abi, functionName: 'deposit', args: [beneficiary, total + amount] }),
  )
}

export async function udcBalance(client: AnvilClient, services: Services, owner: Address): Promise<bigint> {
  return client.readContract({ address: services.userDeposit, abi: UserDeposit.abi, functionName: 'balances', args: [owner] })
}

/**
 * Runs a constructor through eth_call (nothing is deployed) and returns its revert reason; throws if the
 * constructor succeeds or reverts without a reason string.
 */
export async function constructorRevertReason<const abi extends Abi>(
  client: AnvilClient,
  artifact: { contractName: keyof typeof bytecode; abi: abi },
  args: ContractConstructorArgs<abi>,
): Promise<string> {
  const data = encodeDeployData({ abi: artifact.abi, bytecode: bytecode[artifact.contractName], args } as never)
  try {
    await client.call({ data })
  } catch (error) {
    const raw = error instanceof BaseError ? (error.walk((e) => typeof (e as { data?: unknown }).data === 'string') as { data?: Hex } | null) : null
    if (!raw?.data) throw error
    const decoded = decodeErrorResult({ abi: [], data: raw.data })
    if (decoded.errorName !== 'Error') throw new Error(`constructor reverted with ${decoded.errorName}`)
    return decoded.args[0] as string
  }
  throw new Error('expected the constructor to revert, but it succeeded')
}
