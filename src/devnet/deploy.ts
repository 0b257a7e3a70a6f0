import { SluiceError } from '../errors.ts'
import {
  getContractAddress,
  maxUint256,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type ContractConstructorArgs,
  type Hex,
  type TestClient,
  type Transport,
} from 'viem'
import { deployContract, estimateFeesPerGas, getAutomine, getChainId, getTransactionCount, getTransactionReceipt, mine, writeContract } from 'viem/actions'
import { waitForReceipt } from '../chain/receipt.ts'
import { CustomToken, MonitoringService, OneToN, SecretRegistry, ServiceRegistry, TokenNetworkRegistry, UserDeposit } from '../contracts/index.ts'
import { contractsVersion, type DeployedContract, type DeployedContractName, type Deployment } from '../chain/deployment.ts'

/** Settle timeout bounds of raiden-contracts' test deployments (docs/protocol.md §1.3), in blocks. */
export const settlementTimeoutMin = 5n
export const settlementTimeoutMax = 100_000n

/** ServiceRegistry parameters: raiden-contracts' test constants (`tests/utils/constants.py`). */
export const serviceRegistryParameters = {
  /** 2000 SVT for the first registration; the price then decays towards min_price. */
  initialPrice: 2000n * 10n ** 18n,
  /** Each registration raises the price by 6/5. */
  priceBumpNumerator: 6n,
  priceBumpDenominator: 5n,
  /** Seconds for the price to fall to about 1/e when nobody registers: 200 days. */
  decayConstant: 200n * 86_400n,
  minPrice: 1000n,
  /** A registration is valid for 180 days (seconds, even in 0.40). */
  registrationDuration: 180n * 86_400n,
} as const

/** What each token contract is created with: 1,000,000 tokens of 18 decimals, owned by the deployer. */
export const tokenSupply = 10n ** 24n
export const serviceTokenSymbol = 'SVT'
export const testTokens = [
  { symbol: 'TTT', name: 'Test Token' },
  { symbol: 'TT2', name: 'Test Token 2' },
] as const

/** Any anvil client with an account: sluice's own (`createDevnetClient`) or a test's. */
export type DeployContractsClient = TestClient<'anvil', Transport, Chain, Account, false>

export type DeployContractsParameters = {
  /** Recorded in the deployment, for nodes to reach the chain. */
  rpcUrl: string
  /** How many token networks the registry accepts; 1000 by default. */
  maxTokenNetworks?: bigint
  /** UserDeposit's cap on all deposits together; no cap (2^256-1) by default. */
  userDepositLimit?: bigint
}

/** The deployment, with the test tokens known by symbol. */
export type DeployContractsReturnType = Deployment & { tokens: Record<(typeof testTokens)[number]['symbol'], Address> }

export class DeployContractsError extends SluiceError {
  override name = 'DeployContractsError' as const
  override readonly code = 'DEPLOY_CONTRACTS' as const
  constructor(
    readonly step: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`deploying ${step} failed: ${message}`, options)
  }
}

export type DeployContractsErrorType = DeployContractsError

/**
 * Deploys the Raiden 0.40 contracts, the service token and the test tokens from the client's account, and
 * returns the deployment (docs/architecture.md, the deployment file).
 *
 * Fast: contract addresses follow from the deployer's nonce, so every transaction is sent at once with an
 * explicit nonce and the receipts are awaited at the end. anvil estimates gas against its pending state, so a
 * constructor that checks an earlier contract's code already sees it. On an interval-mining anvil the pending
 * transactions are mined into one block at once instead of waiting for the next tick.
 */
export async function deployContracts(
  client: DeployContractsClient,
  { rpcUrl, maxTokenNetworks = 1000n, userDepositLimit = maxUint256 }: DeployContractsParameters,
): Promise<DeployContractsReturnType> {
  const deployer = client.account.address
  const [chainId, firstNonce, fees] = await Promise.all([
    getChainId(client),
    getTransactionCount(client, { address: deployer, blockTag: 'pending' }),
    estimateFeesPerGas(client),
  ])
  let nonce = firstNonce
  const sent: { step: string; hash: Hex }[] = []

  async function send(step: string, transaction: () => Promise<Hex>): Promise<void> {
    try {
      sent.push({ step, hash: await transaction() })
    } catch (e) {
      throw new DeployContractsError(step, (e as { shortMessage?: string }).shortMessage ?? String(e), { cause: e })
    }
  }

  async function create<const abi extends Abi>(step: string, artifact: { abi: abi; bytecode: Hex }, args: ContractConstructorArgs<abi>): Promise<Address> {
    const address = getContractAddress({ from: deployer, nonce: BigInt(nonce) })
    const parameters = { abi: artifact.abi, bytecode: artifact.bytecode, args, nonce: nonce++, ...fees }
    // viem cannot narrow the constructor arguments through a generic abi; `args` is checked by the signature.
    await send(step, () => deployContract(client, parameters as never))
    return address
  }

  const secretRegistry = await create('SecretRegistry', SecretRegistry, [])
  const tokenNetworkRegistry = await create('TokenNetworkRegistry', TokenNetworkRegistry, [
    secretRegistry,
    settlementTimeoutMin,
    settlementTimeoutMax,
    maxTokenNetworks,
  ])
  const serviceToken = await create(`service token ${serviceTokenSymbol}`, CustomToken, [tokenSupply, 18, 'Service Token', serviceTokenSymbol])
  const p = serviceRegistryParameters
  const serviceRegistry = await create('ServiceRegistry', ServiceRegistry, [
    serviceToken,
    deployer,
    p.initialPrice,
    p.priceBumpNumerator,
    p.priceBumpDenominator,
    p.decayConstant,
    p.minPrice,
    p.registrationDuration,
  ])
  const userDeposit = await create('UserDeposit', UserDeposit, [serviceToken, userDepositLimit])
  const oneToN = await create('OneToN', OneToN, [userDeposit, BigInt(chainId), serviceRegistry])
  const monitoringService = await create('MonitoringService', MonitoringService, [serviceToken, serviceRegistry, userDeposit, tokenNetworkRegistry])
  const initNonce = nonce++
  await send('UserDeposit.init', () =>
    writeContract(client, {
      address: userDeposit,
      abi: UserDeposit.abi,
      functionName: 'init',
      args: [monitoringService, oneToN],
      nonce: initNonce,
      ...fees,
    }),
  )
  const tokens = {} as DeployContractsReturnType['tokens']
  for (const { symbol, name } of testTokens) tokens[symbol] = await create(`token ${symbol}`, CustomToken, [tokenSupply, 18, name, symbol])

  if (!(await getAutomine(client))) await mine(client, { blocks: 1 })
  const reader = { getTransactionReceipt: (args: { hash: Hex }) => getTransactionReceipt(client, args), pollingInterval: 20 }
  const receipts = await Promise.all(sent.map(({ hash }) => waitForReceipt(reader, hash, { timeout: 60_000 })))
  receipts.forEach((receipt, i) => {
    if (receipt.status !== 'success') throw new DeployContractsError(sent[i]!.step, `transaction ${receipt.transactionHash} reverted`)
  })
  const blockOf = (step: string) => Number(receipts[sent.findIndex((s) => s.step === step)]!.blockNumber)
  const deployed = (name: DeployedContractName, address: Address): DeployedContract => ({ address, blockNumber: blockOf(name) })

  return {
    chainId,
    contracts_version: contractsVersion,
    contracts: {
      TokenNetworkRegistry: deployed('TokenNetworkRegistry', tokenNetworkRegistry),
      SecretRegistry: deployed('SecretRegistry', secretRegistry),
      UserDeposit: deployed('UserDeposit', userDeposit),
      ServiceRegistry: deployed('ServiceRegistry', serviceRegistry),
      OneToN: deployed('OneToN', oneToN),
      MonitoringService: deployed('MonitoringService', monitoringService),
    },
    tokens,
    serviceToken,
    rpcUrl,
  }
}
