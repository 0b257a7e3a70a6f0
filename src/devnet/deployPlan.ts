import { encodeDeployData, encodeFunctionData, getAddress, keccak256, maxUint256, zeroAddress, type Abi, type Address, type Hex, type PublicClient } from 'viem'
import {
  codeHashes,
  CustomToken,
  MonitoringService,
  OneToN,
  SecretRegistry,
  ServiceRegistry,
  TokenNetworkRegistry,
  UserDeposit,
  bytecode,
} from '../contracts/index.ts'

/**
 * What a deployment consists of, as steps: each creates one contract or makes one call, names the steps whose
 * contracts it needs on the chain first, and knows from the chain whether it is done and done right. The runner
 * (deployRunner.ts) sends them, resumes them after a crash, and checks them; `sluice deploy`, `sluice chain`,
 * `sluice devnet` and the tests' deployContracts all go through these steps (docs/decisions/0050-sluice-deploy.md).
 */

/** What a deployment is made with. The defaults of a real network are in `raidenDefaults`, a test chain's in deploy.ts. */
export type DeployParameters = {
  /** The TokenNetworkRegistry's bounds on a channel's settle timeout, in blocks. */
  settleTimeoutMin: bigint
  settleTimeoutMax: bigint
  /** How many token networks the registry accepts. */
  maxTokenNetworks: bigint
  /** UserDeposit's cap on all deposits together. */
  userDepositWholeLimit: bigint
  serviceRegistry: {
    /** Who may change the registry's parameters; the deployer when absent. */
    controller?: Address
    initialPrice: bigint
    priceBumpNumerator: bigint
    priceBumpDenominator: bigint
    /** Seconds for the price to fall to about 1/e while nobody registers. */
    decayConstant: bigint
    minPrice: bigint
    /** Seconds a registration lasts. */
    registrationDuration: bigint
  }
  /** A token already on the chain that pays the services (UserDeposit, ServiceRegistry); deployed (SVT) when absent. */
  serviceToken?: Address
  /** Mintable test tokens (CustomToken: anyone may mint) to deploy, each with 10^6 of them held by the deployer. */
  testTokens: readonly { symbol: string; name: string }[]
  /** Whether the test tokens get a token network (the devnet registers them itself, the tests not at all). */
  registerTestTokens: boolean
  /** Tokens already on the chain to register. */
  tokens: readonly Address[]
}

/**
 * raiden-contracts' deployer (`raiden_contracts/deploy/__main__.py`, 0.40): its settle timeout bounds for a real
 * network (DEPLOY_SETTLE_TIMEOUT_MIN 500 and _MAX 555428 blocks, about 2 hours and 3 months at 15 s), and the
 * ServiceRegistry and UserDeposit arguments its 0.40 test networks were deployed with (Görli, Rinkeby: 2000 tokens
 * first, bump 6/5, decay 200 days, min price 1000, 180 days, no deposit cap). Its deployer has no default for
 * --max-token-networks; ours is `sluice chain`'s 1000.
 */
export const raidenDefaults = {
  settleTimeoutMin: 500n,
  settleTimeoutMax: 555_428n,
  maxTokenNetworks: 1000n,
  userDepositWholeLimit: maxUint256,
  serviceRegistry: {
    initialPrice: 2000n * 10n ** 18n,
    priceBumpNumerator: 6n,
    priceBumpDenominator: 5n,
    decayConstant: 200n * 86_400n,
    minPrice: 1000n,
    registrationDuration: 180n * 86_400n,
  },
} as const satisfies Partial<DeployParameters>

/** What each token contract is created with: 1,000,000 tokens of 18 decimals, owned by the deployer. */
export const tokenSupply = 10n ** 24n
export const serviceTokenSymbol = 'SVT'
export const serviceTokenName = 'Service Token'

export type StepId = string

/** The addresses of the contracts the steps created (or were given), by step id. */
export type AddressOf = (id: StepId) => Address

type StepBase = {
  id: StepId
  /** Steps whose contracts must be on the chain before this one is sent (constructors check their code). */
  needs: readonly StepId[]
}

/** Creates a contract: its address follows from the deployer's nonce. */
export type CreateStep = StepBase & {
  kind: 'create'
  /** The contract's name in src/contracts: its runtime code must hash to `codeHashes[contract]`. */
  contract: keyof typeof codeHashes
  /** The creation code with the constructor's arguments. */
  data(addressOf: AddressOf): Hex
  /** What is wrong with the contract at `address` for it to be this step's (beyond its code), e.g. the wrong symbol. */
  check(client: PublicClient, address: Address, addressOf: AddressOf): Promise<string[]>
}

/** A call to a contract created before; the chain tells whether it was made. */
export type CallStep = StepBase & {
  kind: 'call'
  to(addressOf: AddressOf): Address
  data(addressOf: AddressOf): Hex
  /** Whether the chain shows the call made, and what is wrong if it shows it made otherwise. */
  state(client: PublicClient, addressOf: AddressOf): Promise<{ done: boolean; problems: string[] }>
}

export type DeployStep = CreateStep | CallStep

export type DeployPlan = {
  parameters: DeployParameters
  steps: readonly DeployStep[]
  /** Addresses known before anything is sent: a given service token, given tokens. */
  given: ReadonlyMap<StepId, Address>
}

export const stepIds = {
  secretRegistry: 'SecretRegistry',
  tokenNetworkRegistry: 'TokenNetworkRegistry',
  serviceToken: 'service token',
  serviceRegistry: 'ServiceRegistry',
  userDeposit: 'UserDeposit',
  oneToN: 'OneToN',
  monitoringService: 'MonitoringService',
  userDepositInit: 'UserDeposit.init',
  testToken: (symbol: string) => `token ${symbol}`,
  givenToken: (address: Address) => `token ${address}`,
  register: (tokenStep: StepId) => `register ${tokenStep.replace(/^token /, '')}`,
} as const

/** Creation code with its constructor arguments (viem checks them against the ABI). */
function creation<const abi extends Abi>(artifact: { contractName: keyof typeof bytecode; abi: abi }, args: readonly unknown[]): Hex {
  return encodeDeployData({ abi: artifact.abi, bytecode: bytecode[artifact.contractName], args } as never)
}

function read(client: PublicClient, address: Address, abi: Abi, functionName: string, args: readonly unknown[] = []): Promise<unknown> {
  return client.readContract({ address, abi, functionName, args } as never)
}

/** `field` must read `expected` (addresses compared checksummed); a mismatch is said in words. */
async function expect(client: PublicClient, address: Address, abi: Abi, field: string, expected: unknown, what: string): Promise<string[]> {
  const actual = await read(client, address, abi, field)
  const same = typeof expected === 'string' && typeof actual === 'string' ? expected.toLowerCase() === actual.toLowerCase() : actual === expected
  return same ? [] : [`${what}.${field} is ${String(actual)}, expected ${String(expected)}`]
}

async function expectAll(checks: Promise<string[]>[]): Promise<string[]> {
  return (await Promise.all(checks)).flat()
}

/** The steps of a deployment by `deployer` on `chainId` with `parameters`, in the order they are sent. */
export function deployPlan(parameters: DeployParameters, { deployer, chainId }: { deployer: Address; chainId: number }): DeployPlan {
  const p = parameters
  const sr = p.serviceRegistry
  const ids = stepIds
  const given = new Map<StepId, Address>()
  if (p.serviceToken) given.set(ids.serviceToken, getAddress(p.serviceToken))
  for (const token of p.tokens) given.set(ids.givenToken(getAddress(token)), getAddress(token))

  const token = (id: StepId, symbol: string, name: string): CreateStep => ({
    id,
    kind: 'create',
    contract: 'CustomToken',
    needs: [],
    data: () => creation(CustomToken, [tokenSupply, 18, name, symbol]),
    check: (client, address) => expect(client, address, CustomToken.abi, 'symbol', symbol, id),
  })
  const register = (tokenStep: StepId): CallStep => ({
    id: ids.register(tokenStep),
    kind: 'call',
    needs: [ids.tokenNetworkRegistry, ...(given.has(tokenStep) ? [] : [tokenStep])],
    to: (a) => a(ids.tokenNetworkRegistry),
    data: (a) => encodeFunctionData({ abi: TokenNetworkRegistry.abi, functionName: 'createERC20TokenNetworkWithoutLimits', args: [a(tokenStep)] }),
    state: async (client, a) => {
      const network = (await read(client, a(ids.tokenNetworkRegistry), TokenNetworkRegistry.abi, 'token_to_token_networks', [a(tokenStep)])) as Address
      if (network === zeroAddress) return { done: false, problems: [] }
      const code = await client.getCode({ address: network })
      const ok = code !== undefined && keccak256(code) === codeHashes.TokenNetwork
      return { done: true, problems: ok ? [] : [`the token network of ${a(tokenStep)} at ${network} is not a TokenNetwork`] }
    },
  })

  const steps: DeployStep[] = [
    {
      id: ids.secretRegistry,
      kind: 'create',
      contract: 'SecretRegistry',
      needs: [],
      data: () => creation(SecretRegistry, []),
      check: async () => [],
    },
    ...(p.serviceToken ? [] : [token(ids.serviceToken, serviceTokenSymbol, serviceTokenName)]),
    ...p.testTokens.map(({ symbol, name }) => token(ids.testToken(symbol), symbol, name)),
    {
      id: ids.tokenNetworkRegistry,
      kind: 'create',
      contract: 'TokenNetworkRegistry',
      needs: [ids.secretRegistry],
      data: (a) => creation(TokenNetworkRegistry, [a(ids.secretRegistry), p.settleTimeoutMin, p.settleTimeoutMax, p.maxTokenNetworks]),
      check: async (client, address, a) => {
        const abi = TokenNetworkRegistry.abi
        const problems = await expectAll([
          expect(client, address, abi, 'secret_registry_address', a(ids.secretRegistry), ids.tokenNetworkRegistry),
          expect(client, address, abi, 'settlement_timeout_min', p.settleTimeoutMin, ids.tokenNetworkRegistry),
          expect(client, address, abi, 'settlement_timeout_max', p.settleTimeoutMax, ids.tokenNetworkRegistry),
        ])
        // The controller may lift the limit later (removeLimits).
        const max = (await read(client, address, abi, 'max_token_networks')) as bigint
        if (max !== p.maxTokenNetworks && max !== maxUint256) problems.push(`TokenNetworkRegistry.max_token_networks is ${max}, expected ${p.maxTokenNetworks}`)
        return problems
      },
    },
    {
      id: ids.serviceRegistry,
      kind: 'create',
      contract: 'ServiceRegistry',
      needs: given.has(ids.serviceToken) ? [] : [ids.serviceToken],
      data: (a) =>
        creation(ServiceRegistry, [
          a(ids.serviceToken),
          sr.controller ?? deployer,
          sr.initialPrice,
          sr.priceBumpNumerator,
          sr.priceBumpDenominator,
          sr.decayConstant,
          sr.minPrice,
          sr.registrationDuration,
        ]),
      // The price and its parameters change with registrations and the controller's calls: only the wiring is checked.
      check: (client, address, a) => expect(client, address, ServiceRegistry.abi, 'token', a(ids.serviceToken), ids.serviceRegistry),
    },
    {
      id: ids.userDeposit,
      kind: 'create',
      contract: 'UserDeposit',
      needs: given.has(ids.serviceToken) ? [] : [ids.serviceToken],
      data: (a) => creation(UserDeposit, [a(ids.serviceToken), p.userDepositWholeLimit]),
      check: (client, address, a) =>
        expectAll([
          expect(client, address, UserDeposit.abi, 'token', a(ids.serviceToken), ids.userDeposit),
          expect(client, address, UserDeposit.abi, 'whole_balance_limit', p.userDepositWholeLimit, ids.userDeposit),
        ]),
    },
    {
      id: ids.oneToN,
      kind: 'create',
      contract: 'OneToN',
      needs: [ids.userDeposit, ids.serviceRegistry],
      data: (a) => creation(OneToN, [a(ids.userDeposit), BigInt(chainId), a(ids.serviceRegistry)]),
      check: (client, address, a) =>
        expectAll([
          expect(client, address, OneToN.abi, 'deposit_contract', a(ids.userDeposit), ids.oneToN),
          expect(client, address, OneToN.abi, 'chain_id', BigInt(chainId), ids.oneToN),
          expect(client, address, OneToN.abi, 'service_registry_contract', a(ids.serviceRegistry), ids.oneToN),
        ]),
    },
    {
      id: ids.monitoringService,
      kind: 'create',
      contract: 'MonitoringService',
      needs: [ids.serviceRegistry, ids.userDeposit, ids.tokenNetworkRegistry],
      data: (a) => creation(MonitoringService, [a(ids.serviceToken), a(ids.serviceRegistry), a(ids.userDeposit), a(ids.tokenNetworkRegistry)]),
      check: (client, address, a) =>
        expectAll([
          expect(client, address, MonitoringService.abi, 'token', a(ids.serviceToken), ids.monitoringService),
          expect(client, address, MonitoringService.abi, 'service_registry', a(ids.serviceRegistry), ids.monitoringService),
          expect(client, address, MonitoringService.abi, 'user_deposit', a(ids.userDeposit), ids.monitoringService),
          expect(client, address, MonitoringService.abi, 'token_network_registry', a(ids.tokenNetworkRegistry), ids.monitoringService),
        ]),
    },
    {
      id: ids.userDepositInit,
      kind: 'call',
      needs: [ids.userDeposit, ids.monitoringService, ids.oneToN],
      to: (a) => a(ids.userDeposit),
      data: (a) => encodeFunctionData({ abi: UserDeposit.abi, functionName: 'init', args: [a(ids.monitoringService), a(ids.oneToN)] }),
      state: async (client, a) => {
        const udc = a(ids.userDeposit)
        const [msc, oneToN] = (await Promise.all([
          read(client, udc, UserDeposit.abi, 'msc_address'),
          read(client, udc, UserDeposit.abi, 'one_to_n_address'),
        ])) as [Address, Address]
        if (msc === zeroAddress && oneToN === zeroAddress) return { done: false, problems: [] }
        const problems = [
          ...(msc.toLowerCase() === a(ids.monitoringService).toLowerCase() ? [] : [`UserDeposit.msc_address is ${msc}, expected ${a(ids.monitoringService)}`]),
          ...(oneToN.toLowerCase() === a(ids.oneToN).toLowerCase() ? [] : [`UserDeposit.one_to_n_address is ${oneToN}, expected ${a(ids.oneToN)}`]),
        ]
        return { done: true, problems }
      },
    },
    ...(p.registerTestTokens ? p.testTokens.map(({ symbol }) => register(ids.testToken(symbol))) : []),
    ...p.tokens.map((t) => register(ids.givenToken(getAddress(t)))),
  ]
  return { parameters, steps, given }
}
